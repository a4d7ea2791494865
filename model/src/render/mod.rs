//! The rendering layer: a counterexample replayed once ([`replay`]) and
//! shown from that replay as numbered text ([`text`]), JSON ([`json`]), a
//! Mermaid diagram ([`mermaid`]) or in the Explorer ([`explorer`]: the state
//! and step views, the SVG, what the Explorer's page adds). [`flags`] and
//! [`plain`] spell configurations and values for people.
//!
//! It reads the search's reports and the world; nothing below it reads it.

pub mod explorer;
pub mod flags;
pub mod json;
pub mod mermaid;
pub mod plain;
pub mod replay;
pub mod text;
