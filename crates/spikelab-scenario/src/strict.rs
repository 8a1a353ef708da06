//! A scenario's TOML value read strictly: a table of fields (`adapt = { ... }`, `[flow.tcp]`)
//! must be a table. serde lets a derived struct be read from an array too, its fields in
//! declaration order, so `app = ["bulk"]` or `adapt = [["64kbps", "384kbps"]]` would be read as
//! fields the writer never named, or refused in words about the wrong field
//! (`adapt[0]: ... expected an array`). [`Strict`] hands every value to serde as `toml::Value`
//! does, except that a struct asked of an array is an error at that field. A table hands out
//! its `type` or `algo` key first, the others in order: a tagged table (a stage and its
//! `type`, a congestion control and its `algo`) knows its type before it reads its fields.

use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use toml::Value;

type Error = toml::de::Error;

/// A TOML value whose tables and arrays hand out strict values in turn.
pub(crate) struct Strict(pub Value);

impl<'de> Deserializer<'de> for Strict {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            // As toml's own reading: a visitor that stops early (a tuple, a fixed-size array)
            // leaves elements over, which is an error, not a silent cut.
            Value::Table(t) => {
                let len = t.len();
                let mut entries: Vec<(String, Value)> = t.into_iter().collect();
                if let Some(i) = entries.iter().position(|(k, _)| k == "type" || k == "algo") {
                    let typed = entries.remove(i);
                    entries.insert(0, typed);
                }
                let mut map = StrictMap {
                    entries: entries.into_iter(),
                    value: None,
                };
                let v = visitor.visit_map(&mut map)?;
                match map.entries.len() {
                    0 => Ok(v),
                    left => Err(de::Error::invalid_length(len - left, &"fewer entries")),
                }
            }
            Value::Array(a) => {
                let len = a.len();
                let mut seq = StrictSeq(a.into_iter());
                let v = visitor.visit_seq(&mut seq)?;
                match seq.0.len() {
                    0 => Ok(v),
                    left => Err(de::Error::invalid_length(
                        len - left,
                        &"fewer elements in the array",
                    )),
                }
            }
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(_) => Err(de::Error::invalid_type(de::Unexpected::Seq, &"a table")),
            v => Strict(v).deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            v @ Value::Table(_) => Strict(v).deserialize_any(visitor),
            other => other.deserialize_map(visitor),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            v @ Value::Array(_) => Strict(v).deserialize_any(visitor),
            other => other.deserialize_seq(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // A present key is Some (TOML has no null).
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // A string or a one-key table: toml's own reading (a variant's fields are not strict).
        self.0.deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple tuple_struct identifier ignored_any
    }
}

impl<'de> IntoDeserializer<'de, Error> for Strict {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

struct StrictSeq(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for StrictSeq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Strict(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct StrictMap {
    entries: std::vec::IntoIter<(String, Value)>,
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for StrictMap {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(Value::String(k)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let v = self.value.take().expect("next_value after next_key");
        seed.deserialize(Strict(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        a: u32,
        #[serde(default)]
        b: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        inner: Option<Inner>,
        list: Vec<Inner>,
        tags: Vec<String>,
    }

    fn read(text: &str) -> Result<Outer, String> {
        let v: Value = toml::from_str(text).unwrap();
        serde_path_to_error::deserialize(Strict(v))
            .map_err(|e| format!("{}: {}", e.path(), e.inner().message()))
    }

    #[test]
    fn tables_and_arrays_read_as_toml_reads_them() {
        let o = read("inner = { a = 1, b = \"x\" }\nlist = [{ a = 2 }]\ntags = [\"t\"]\n").unwrap();
        assert_eq!(
            o.inner,
            Some(Inner {
                a: 1,
                b: Some("x".into())
            })
        );
        assert_eq!(o.list, vec![Inner { a: 2, b: None }]);
        assert_eq!(o.tags, vec!["t".to_string()]);
    }

    #[test]
    fn an_array_longer_than_its_tuple_is_refused() {
        #[derive(Debug, Deserialize)]
        struct Pair {
            #[allow(dead_code)]
            pair: (u32, u32),
        }
        let v: Value = toml::from_str("pair = [1, 2, 3]\n").unwrap();
        let e = serde_path_to_error::deserialize::<_, Pair>(Strict(v)).unwrap_err();
        assert_eq!(e.path().to_string(), "pair");
        assert!(
            e.inner().message().starts_with("invalid length 2"),
            "{}",
            e.inner()
        );
        let v: Value = toml::from_str("pair = [1, 2]\n").unwrap();
        assert_eq!(
            serde_path_to_error::deserialize::<_, Pair>(Strict(v))
                .unwrap()
                .pair,
            (1, 2)
        );
    }

    #[test]
    fn an_array_where_a_table_of_fields_goes_is_refused_at_that_field() {
        // serde alone reads inner = [1] as { a = 1 }.
        let v: Value = toml::from_str("inner = [1]\nlist = []\ntags = []\n").unwrap();
        let loose: Outer = serde_path_to_error::deserialize(v).unwrap();
        assert_eq!(loose.inner, Some(Inner { a: 1, b: None }));
        let e = read("inner = [1]\nlist = []\ntags = []\n").unwrap_err();
        assert_eq!(e, "inner: invalid type: sequence, expected a table");
        let e = read("list = [[3]]\ntags = []\n").unwrap_err();
        assert_eq!(e, "list[0]: invalid type: sequence, expected a table");
    }
}
