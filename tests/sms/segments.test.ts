import { describe, expect, it } from "vitest";
import { fitSms, isGsm7, MAX_SMS_SEGMENTS, smsSize } from "../../lib/sms/segments.js";
import { keywordOf, SMS_REPLIES } from "../../lib/sms/keywords.js";
import { phoneInText, toE164 } from "../../lib/sms/phone.js";

describe("segments are counted as GSM-7 or UCS-2 (3GPP TS 23.038, 23.040)", () => {
  it("GSM-7: 160 septets in one segment, then 153 a segment", () => {
    expect(smsSize("a".repeat(160))).toEqual({ encoding: "GSM-7", segments: 1, units: 160 });
    expect(smsSize("a".repeat(161))).toEqual({ encoding: "GSM-7", segments: 2, units: 161 });
    expect(smsSize("a".repeat(306)).segments).toBe(2);
    expect(smsSize("a".repeat(307)).segments).toBe(3);
    // Accented letters of the GSM alphabet keep a text GSM-7.
    expect(smsSize("Ich habe Ihren Hund gefunden: ÄÖÜäöüß é à ñ").encoding).toBe("GSM-7");
  });

  it("an extension character (€ [ ] { } ^ ~ | \\) takes two septets, and never splits across segments", () => {
    expect(smsSize("€".repeat(80))).toEqual({ encoding: "GSM-7", segments: 1, units: 160 });
    expect(smsSize("€".repeat(81)).segments).toBe(2);
    // 152 plain septets and a euro sign: the escape and the sign move to the second segment together.
    expect(smsSize(`${"a".repeat(152)}€${"a".repeat(152)}`).segments).toBe(3);
    expect(smsSize(`${"a".repeat(151)}€${"a".repeat(153)}`).segments).toBe(2);
  });

  it("UCS-2: 70 units in one segment, then 67 a segment; an emoji takes two units and is never split", () => {
    expect(smsSize("ж".repeat(70))).toEqual({ encoding: "UCS-2", segments: 1, units: 70 });
    expect(smsSize("ж".repeat(71)).segments).toBe(2);
    expect(smsSize("ж".repeat(134)).segments).toBe(2);
    expect(smsSize("ж".repeat(135)).segments).toBe(3);
    expect(smsSize("🐶".repeat(35))).toEqual({ encoding: "UCS-2", segments: 1, units: 70 });
    // 33 dogs fill 66 units of a part; the 34th would split, so 36 dogs need 2 parts (33 + 3), 67 dogs need 3.
    expect(smsSize("🐶".repeat(36)).segments).toBe(2);
    expect(smsSize("🐶".repeat(66)).segments).toBe(2);
    expect(smsSize("🐶".repeat(67)).segments).toBe(3);
    // One character outside GSM-7 makes the whole text UCS-2.
    expect(smsSize(`${"a".repeat(100)}—`)).toEqual({ encoding: "UCS-2", segments: 2, units: 101 });
    expect(isGsm7("curly ’ quote")).toBe(false);
  });
});

describe("a text is fitted to 2 segments and ends with its link", () => {
  const link = "https://pets.test.example/lost/2b1d1b4e-0c7e-4c62-9a55-0f5f0f7f4a11";

  it("leaves a short text whole", () => {
    expect(fitSms("A found animal may be yours.", link)).toBe(`A found animal may be yours. ${link}`);
  });

  it("cuts a long GSM-7 text at a word with '...', so it stays GSM-7, and keeps the link", () => {
    const text = fitSms("word ".repeat(200), link);
    expect(text.endsWith(`... ${link}`)).toBe(true);
    expect(smsSize(text)).toMatchObject({ encoding: "GSM-7", segments: MAX_SMS_SEGMENTS });
    expect(text).not.toMatch(/wor\.\.\./);
  });

  it("cuts a long UCS-2 text with an ellipsis character, within 2 segments", () => {
    const text = fitSms("Я нашёл вашу собаку у парка. ".repeat(20), link);
    expect(text.endsWith(`… ${link}`)).toBe(true);
    expect(smsSize(text)).toMatchObject({ encoding: "UCS-2", segments: 2 });
  });

  it("never splits an emoji when cutting", () => {
    const text = fitSms("🐶".repeat(200), link);
    expect(smsSize(text).segments).toBeLessThanOrEqual(2);
    expect(text).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });
});

describe("keywords and numbers", () => {
  it("reads STOP and its synonyms, START, UNSTOP and HELP trimmed and in any case", () => {
    for (const word of ["STOP", "stop", " Stop\n", "STOPALL", "unsubscribe", "Cancel", "END", "quit"]) expect(keywordOf(word)).toBe("stop");
    for (const word of ["START", "unstop", " start "]) expect(keywordOf(word)).toBe("start");
    expect(keywordOf("help")).toBe("help");
    expect(keywordOf("please stop")).toBeNull();
    expect(keywordOf("Thanks, I will come at 5")).toBeNull();
  });

  it("keeps the service's answers to one GSM-7 segment or two", () => {
    for (const reply of Object.values(SMS_REPLIES)) expect(smsSize(fitSms(reply, "https://pets.test.example/")).encoding).toBe("GSM-7");
  });

  it("reads numbers as libphonenumber does, in E.164, and finds one in a finder's contact", () => {
    expect(toE164("0176 1234 5601", "DE")).toBe("+4917612345601");
    expect(toE164("+49 (176) 1234-5601")).toBe("+4917612345601");
    expect(toE164("0176 1234 5601")).toBeNull();
    expect(toE164("12345", "DE")).toBeNull();
    expect(phoneInText("Anna, call 0176 1234 5601 after 6", "DE")).toBe("+4917612345601");
    expect(phoneInText("anna@example.org", "DE")).toBeNull();
  });
});
