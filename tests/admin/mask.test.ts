import { describe, expect, it } from "vitest";
import { isSensitiveKey, MASK, maskPayload } from "../../api/admin/outbox/mask.js";

describe("sensitive payload fields are masked by key name at any depth", () => {
  it("masks contact details, locations, coordinates, tokens and message bodies", () => {
    const payload = {
      reportId: "0b5c6f0e-2f43-4a59-9d9c-5d1f0f7c3e11",
      reporterId: "user-1",
      species: "dog",
      email: "owner@example.com",
      phone: "+33 6 12 34 56 78",
      fromContact: "finder@example.com",
      location: { lat: 48.8566, lon: 2.3522 },
      message: "I found your dog near the bakery",
      verificationDetail: "white patch on the left ear",
      token: "secret-token",
      homeAddress: "1 rue de Rivoli",
    };
    expect(maskPayload(payload)).toEqual({
      reportId: payload.reportId,
      reporterId: "user-1",
      species: "dog",
      email: MASK,
      phone: MASK,
      fromContact: MASK,
      location: MASK,
      message: MASK,
      verificationDetail: MASK,
      token: MASK,
      homeAddress: MASK,
    });
  });

  it("masks inside nested objects and arrays and leaves other values as they are", () => {
    const payload = {
      sightings: [{ id: 1, lat: 1.5, lon: 2.5, seenAt: "2026-01-01T00:00:00Z" }],
      recipient: { actorId: "user-2", contact: { email: "x@example.com" } },
      count: 3,
      tags: ["a", "b"],
      nothing: null,
    };
    expect(maskPayload(payload)).toEqual({
      sightings: [{ id: 1, lat: MASK, lon: MASK, seenAt: "2026-01-01T00:00:00Z" }],
      recipient: { actorId: "user-2", contact: MASK },
      count: 3,
      tags: ["a", "b"],
      nothing: null,
    });
  });

  it("matches key names whatever their case or separators", () => {
    for (const key of ["from_contact", "FROM-CONTACT", "contactEmail", "tokenHash", "Phone_Number", "LATITUDE", "precise_location"]) {
      expect(isSensitiveKey(key), key).toBe(true);
    }
    for (const key of ["reportId", "species", "type", "occurredAt", "status", "channel", "animalName"]) {
      expect(isSensitiveKey(key), key).toBe(false);
    }
  });

  it("does not change its input", () => {
    const payload = { email: "a@example.com", nested: { phone: "1" } };
    maskPayload(payload);
    expect(payload).toEqual({ email: "a@example.com", nested: { phone: "1" } });
  });
});
