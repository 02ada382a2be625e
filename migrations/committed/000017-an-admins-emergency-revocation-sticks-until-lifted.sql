--! Previous: sha1:8a0967781197b48d40eebef8080800f37ae5326e
--! Hash: sha1:c5e519f8b8630c12c10337a7dfdd109b5d527fc3
--! Message: an admin's emergency revocation sticks until lifted

-- An admin's revocation of an emergency profile (revoked_at) holds until an
-- admin lifts it: until then the owner's PUT of the profile is refused, so a
-- revoked token cannot be replaced by the owner the revocation was about.
-- Lifting sets this column and lets the owner issue a fresh token (which
-- clears the revocation); a new revocation clears it again.
alter table emergency_profile add column revocation_lifted_at timestamptz;
