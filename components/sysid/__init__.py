"""drift_sysid: online identification of drifting linear-in-parameter systems (see specs/drift_sysid/)."""
