//! Tune profiles: the chosen method/threads/depth with the measured figures, persisted as TOML.
