//! Host adapter (placeholder until it lands).
