import { describe, expect, it } from "vitest";
import { describeMatch, whenInWords } from "../../lib/matches.js";

describe("a match is described to people in words, never as a percentage", () => {
  it("names the strength, the shared traits and how far away the animal was found", () => {
    expect(describeMatch({ score: 0.93, kind: "found_report", reasons: ["breed", "colors", "sex", "distance"], distanceM: 1_040 })).toBe(
      "a strong match: same breed, colours and sex, found 1 km away",
    );
  });

  it("calls a middling score good and a threshold score possible", () => {
    expect(describeMatch({ score: 0.75, kind: "found_report", reasons: ["colors"], distanceM: 12_400 })).toBe(
      "a good match: same colours, found 12 km away",
    );
    expect(describeMatch({ score: 0.55, kind: "sighting", reasons: ["breed"], distanceM: 300 })).toBe(
      "a possible match: same breed, seen less than 1 km away",
    );
  });

  it("puts a shared microchip first and names marks and photos", () => {
    expect(describeMatch({ score: 0.99, kind: "found_report", reasons: ["microchip", "photo", "marks", "breed"], distanceM: 2_500 })).toBe(
      "a strong match: the same microchip, same breed, similar marks, a similar photo, found 2.5 km away",
    );
  });

  it("says when the animal was found after it was last seen: hours, the next day, or days", () => {
    expect(describeMatch({ score: 0.9, kind: "found_report", reasons: ["breed", "colors"], distanceM: 1_000, gapHours: 26 })).toBe(
      "a strong match: same breed and colours, found 1 km away the next day",
    );
    expect(describeMatch({ score: 0.72, kind: "sighting", reasons: ["colors"], distanceM: 600, gapHours: 3.4 })).toBe(
      "a good match: same colours, seen less than 1 km away 3 hours later",
    );
    expect(describeMatch({ score: 0.6, kind: "found_report", gapHours: 0.2 })).toBe("a possible match: found within the hour");
    expect(whenInWords(1)).toBe("1 hour later");
    expect(whenInWords(43)).toBe("the next day");
    expect(whenInWords(5 * 24 + 3)).toBe("5 days later");
  });

  it("tells the owner when a chip only nearly matches, instead of calling it the same", () => {
    expect(describeMatch({ score: 1, kind: "found_report", reasons: ["microchip", "breed"], distanceM: 2_000, gapHours: 30, microchip: "near" })).toBe(
      "a strong match: a microchip number one keystroke from yours, same breed, found 2 km away the next day",
    );
    expect(describeMatch({ score: 1, kind: "found_report", reasons: ["microchip"], microchip: "equal" })).toBe("a strong match: the same microchip");
  });

  it("says only the strength for an event recorded without reasons or distance", () => {
    expect(describeMatch({ score: 0.6, kind: "found_report" })).toBe("a possible match");
  });
});
