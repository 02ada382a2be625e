import { z } from "zod";
import { text } from "../schemas.js";

export const RelayMessageBody = z
  .object({ message: text(2000), fromContact: text(200) })
  .meta({ id: "RelayMessage" });
export const Accepted = z.object({ id: z.uuid() });
