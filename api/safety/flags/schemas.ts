import { z } from "zod";
import { text } from "../schemas.js";

export const FlagBody = z.object({ reason: text(500) }).meta({ id: "FlagLostReport" });
