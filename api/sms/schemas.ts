import { z } from "zod";
import { SMS_STATUSES } from "../../lib/sms/status.js";

/**
 * The provider's webhooks, as the Twilio-compatible API posts them
 * (application/x-www-form-urlencoded). The provider sends more fields
 * (AccountSid, ApiVersion, …): they are signed too, and kept for the check.
 */

export const SmsStatusCallback = z
  .looseObject({
    MessageSid: z.string().regex(/^[A-Za-z0-9]{2,64}$/),
    MessageStatus: z.enum(SMS_STATUSES),
    ErrorCode: z
      .string()
      .regex(/^\d{0,10}$/)
      .optional()
      .describe("The provider's error code of an undelivered or failed text; 21610: the recipient opted out."),
    To: z.string().max(64).optional(),
  })
  .meta({ id: "SmsStatusCallback" });

export const SmsInbound = z
  .looseObject({
    MessageSid: z.string().regex(/^[A-Za-z0-9]{2,64}$/),
    From: z.string().min(1).max(64),
    To: z.string().max(64).optional(),
    Body: z.string().max(1600).default(""),
  })
  .meta({ id: "SmsInbound" });

export const SmsStatusRecorded = z
  .object({
    messageSid: z.string(),
    status: z.enum(SMS_STATUSES).describe("The text's status now: the callback's, unless a later one was recorded first."),
  })
  .meta({ id: "SmsStatusRecorded" });

/** TwiML: the answer of the inbound webhook. Empty, since every text the service sends goes out through a delivery job. */
export const TWIML_EMPTY = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`;
export const Twiml = z.string().describe("TwiML (text/xml): always an empty <Response>; any answer is a text of its own.");
