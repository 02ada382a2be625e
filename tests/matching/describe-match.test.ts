import { describe, expect, it } from "vitest";
import { describeMatch } from "../../lib/matches.js";

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

  it("says only the strength for an event recorded without reasons or distance", () => {
    expect(describeMatch({ score: 0.6, kind: "found_report" })).toBe("a possible match");
  });
});
