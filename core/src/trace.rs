//! Traces (placeholder until the trace module lands).
