import { z } from "zod";
import { PHONE_CODE_PATTERN } from "../../lib/sms/codes.js";

export const PHONE_STATUSES = ["none", "pending", "verified", "stopped"] as const;
export type PhoneStatus = (typeof PHONE_STATUSES)[number];

export const PhoneStatusField = z
  .enum(PHONE_STATUSES)
  .describe(
    "none: no number. pending: a code went to the number, and nothing else goes to it until the code is entered. " +
      "verified: the number gets texts of the kinds in smsKinds. stopped: the verified number sent STOP; it gets nothing until it sends START.",
  );

export const PhoneEndingField = z
  .string()
  .regex(/^\d{2}$/)
  .nullable()
  .describe("The last two digits of the number set, so you can tell which it is: no response carries the number itself.");

export const PutPhoneBody = z
  .object({
    phone: z
      .string()
      .trim()
      // Any characters but control ones: libphonenumber reads the rest (letters, other scripts' digits, "ext.").
      .regex(/^[^\u0000-\u001f\u007f]{3,40}$/, "must be 3 to 40 characters, none of them a control character")
      .nullable()
      .describe("Any format libphonenumber reads (+49 176 1234 5678, 0176 12345678 in SMS_DEFAULT_REGION's region). null removes the number."),
  })
  .strict()
  .meta({ id: "PutPhone" });

export const VerifyPhoneBody = z
  .object({ code: z.string().trim().regex(PHONE_CODE_PATTERN, "must be the 6 digits of the text") })
  .strict()
  .meta({ id: "VerifyPhone" });

export const PhoneState = z.object({ phoneStatus: PhoneStatusField, phoneEnding: PhoneEndingField }).meta({ id: "PhoneState" });
export type PhoneState = z.output<typeof PhoneState>;
