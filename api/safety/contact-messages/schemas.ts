import { z } from "zod";
import { text } from "../schemas.js";
import { CONTACT_MESSAGE_SCHEMA_ID } from "./wire-names.js";

export const ContactMessageBody = z
  .object({ message: text(2000), fromContact: text(200) })
  .meta({ id: CONTACT_MESSAGE_SCHEMA_ID });
export const Accepted = z.object({ id: z.uuid() });
