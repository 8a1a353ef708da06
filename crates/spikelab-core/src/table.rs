//! Columnar result tables handed to the bindings (and from there to Arrow / Parquet).

/// One column's values.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    I64(Vec<i64>),
    I32(Vec<i32>),
    F64(Vec<f64>),
    /// Codes into the dictionary; -1 is null.
    Dict(Vec<i32>, Vec<String>),
}

impl ColumnData {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::I64(v) => v.len(),
            ColumnData::I32(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Dict(v, _) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub data: ColumnData,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
}

impl Table {
    pub fn num_rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.data.len())
    }
    pub fn push(&mut self, name: &str, data: ColumnData) {
        debug_assert!(self.columns.is_empty() || data.len() == self.num_rows());
        self.columns.push(Column {
            name: name.to_string(),
            data,
        });
    }
    pub fn column(&self, name: &str) -> Option<&ColumnData> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .map(|c| &c.data)
    }
    pub fn i64s(&self, name: &str) -> &[i64] {
        match self.column(name) {
            Some(ColumnData::I64(v)) => v,
            _ => panic!("no int64 column {name}"),
        }
    }
    pub fn f64s(&self, name: &str) -> &[f64] {
        match self.column(name) {
            Some(ColumnData::F64(v)) => v,
            _ => panic!("no float64 column {name}"),
        }
    }
    /// A dictionary column decoded to strings ("" for null), for tests and small tables.
    pub fn strings(&self, name: &str) -> Vec<&str> {
        match self.column(name) {
            Some(ColumnData::Dict(codes, dict)) => codes
                .iter()
                .map(|&c| if c < 0 { "" } else { dict[c as usize].as_str() })
                .collect(),
            _ => panic!("no dictionary column {name}"),
        }
    }
}
