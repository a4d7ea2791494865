//! Values as people read them: Rust's `Debug` layout (`Variant { field: 1 }`)
//! with the id newtypes written as their numbers (`checkpoint: 1`, not
//! `checkpoint: CheckpointId(1)`).
//!
//! [`plain`] formats a typed value through its `Serialize` form, where the
//! ids are already plain numbers: a newtype struct is written as what it
//! wraps, everything else as `Debug` would write it. The world's step log
//! carries outcomes and effects already rendered with `Debug`
//! ([`crate::world::Delivery`]); [`plain_debug`] rewrites such text by
//! reading it as `Debug` output (string literals kept as they are, a
//! `Name(x)` of an id type replaced by `x`).

use std::fmt::Write as _;

use serde::ser::{self, Serialize};

/// The id newtypes of `ckpt-core` that [`plain_debug`] unwraps.
const ID_TYPES: [&str; 7] = [
    "CheckpointId",
    "RequestId",
    "TaskId",
    "AttemptNo",
    "StateHandle",
    "Millis",
    "JobId",
];

/// `value` in `Debug` layout with newtypes unwrapped.
#[must_use]
pub fn plain<T: Serialize + ?Sized>(value: &T) -> String {
    let mut w = Writer(String::new());
    match value.serialize(&mut w) {
        Ok(()) => w.0,
        Err(e) => format!("<{e}>"),
    }
}

/// `Debug` text with every `Id(x)` of an id type written as `x`.
#[must_use]
pub fn plain_debug(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            // A string or char literal: copied up to its closing quote.
            let end = literal_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let wraps = ID_TYPES.contains(&word.as_str()) && chars.get(i) == Some(&'(');
            match wraps.then(|| group_end(&chars, i)).flatten() {
                Some(close) => {
                    let inner: String = chars[i + 1..close].iter().collect();
                    out.push_str(&plain_debug(&inner));
                    i = close + 1;
                }
                None => out.push_str(&word),
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index just past the literal opening at `start`.
fn literal_end(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// The index of the `)` closing the `(` at `open`, if the group holds one
/// value (no comma at its own level).
fn group_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' => {
                i = literal_end(chars, i);
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            ',' if depth == 1 => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Why a value could not be written (a `Serialize` impl that failed).
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

struct Writer(String);

/// A sequence, tuple, map or struct being written: its closing text and
/// whether an element was written yet.
struct Compound<'a> {
    w: &'a mut Writer,
    close: &'static str,
    first: bool,
}

impl Compound<'_> {
    fn sep(&mut self) {
        if !self.first {
            self.w.0.push_str(", ");
        }
        self.first = false;
    }
}

impl<'a> Writer {
    fn open(&'a mut self, name: &str, open: &str, close: &'static str) -> Compound<'a> {
        self.0.push_str(name);
        self.0.push_str(open);
        Compound {
            w: self,
            close,
            first: true,
        }
    }
}

macro_rules! display {
    ($($f:ident: $t:ty),*) => {
        $(fn $f(self, v: $t) -> Result<(), Error> {
            let _ = write!(self.0, "{v:?}");
            Ok(())
        })*
    };
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    display!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f32: f32,
        serialize_f64: f64, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8]);

    fn serialize_none(self) -> Result<(), Error> {
        self.0.push_str("None");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        self.0.push_str("Some(");
        v.serialize(&mut *self)?;
        self.0.push(')');
        Ok(())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.0.push_str("()");
        Ok(())
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<(), Error> {
        self.0.push_str(name);
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.0.push_str(v);
        Ok(())
    }
    /// An id newtype (or any newtype): what it wraps.
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.0.push_str(variant);
        self.0.push('(');
        v.serialize(&mut *self)?;
        self.0.push(')');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open("", "[", "]"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open("", "(", ")"))
    }
    fn serialize_tuple_struct(self, name: &'static str, _: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open(name, "(", ")"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open(variant, "(", ")"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open("", "{", "}"))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a>, Error> {
        Ok(if len == 0 {
            self.open(name, "", "")
        } else {
            self.open(name, " { ", " }")
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(if len == 0 {
            self.open(variant, "", "")
        } else {
            self.open(variant, " { ", " }")
        })
    }
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.sep();
        v.serialize(&mut *self.w)
    }
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), Error> {
        self.sep();
        self.w.0.push_str(key);
        self.w.0.push_str(": ");
        v.serialize(&mut *self.w)
    }
    fn end(self) -> Result<(), Error> {
        self.w.0.push_str(self.close);
        Ok(())
    }
}

macro_rules! compound {
    ($($tr:ident::$f:ident),*) => {
        $(impl ser::$tr for Compound<'_> {
            type Ok = ();
            type Error = Error;
            fn $f<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
                self.element(v)
            }
            fn end(self) -> Result<(), Error> {
                Compound::end(self)
            }
        })*
    };
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Error> {
        self.element(k)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.w.0.push_str(": ");
        v.serialize(&mut *self.w)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        k: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(k, v)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        k: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(k, v)
    }
    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_core::coordinator::{CoordinatorEvent, Timer};
    use ckpt_core::task::TaskEvent;
    use ckpt_core::CheckpointId;

    #[test]
    fn a_typed_value_reads_as_debug_with_plain_ids() {
        let ev = TaskEvent::CheckpointMail {
            checkpoint: CheckpointId(3),
        };
        assert_eq!(plain(&ev), plain_debug(&format!("{ev:?}")));
        assert_eq!(plain(&ev), "CheckpointMail { checkpoint: 3 }");
        let timer = CoordinatorEvent::TimerFired {
            timer: Timer::Timeout(CheckpointId(1)),
        };
        assert_eq!(plain(&timer), "TimerFired { timer: Timeout(1) }");
        assert_eq!(plain(&CoordinatorEvent::StartScheduler), "StartScheduler");
    }

    #[test]
    fn debug_text_loses_only_the_id_wrappers() {
        assert_eq!(
            plain_debug("Applied(Completed { checkpoint: CheckpointId(1), ok: Ok(RequestId(2)) })"),
            "Applied(Completed { checkpoint: 1, ok: Ok(2) })"
        );
        // Not an id type, a tuple, or inside a string: left alone.
        assert_eq!(
            plain_debug(r#"Other(1) TaskId(1, 2) "CheckpointId(4)""#),
            r#"Other(1) TaskId(1, 2) "CheckpointId(4)""#
        );
        assert_eq!(plain_debug("MyCheckpointId(5)"), "MyCheckpointId(5)");
    }
}
