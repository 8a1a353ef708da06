//! `--set key=value` overrides applied to the TOML tree before it is deserialised.

use super::*;

/// Applies one `key=value` override to the TOML tree. A key is a dotted path; `name[i]` picks
/// one element of an array of tables, and a bare array name applies to every element. Inside a
/// path, a stage may be named by its `name` or its type when that is unambiguous:
/// `path.fwd.delay.profile` is `path.fwd.stage[i].profile` for the path's only delay stage.
pub fn apply_override(root: &mut toml::Value, spec: &str) -> Result<()> {
    let Some((key, raw)) = spec.split_once('=') else {
        return Err(ScenarioError::new(
            format!("--set {spec}"),
            "expected key=value",
        ));
    };
    let key = key.trim();
    let raw = raw.trim();
    if key.is_empty() {
        return Err(ScenarioError::new(format!("--set {spec}"), "empty key"));
    }
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
        Err(_) => {
            // An integer TOML cannot hold is not a string the user meant.
            let digits = raw.strip_prefix(['-', '+']).unwrap_or(raw);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
                return Err(ScenarioError::new(
                    key,
                    format!(
                        "integer {raw} is out of range (from {} to {})",
                        i64::MIN,
                        i64::MAX
                    ),
                ));
            }
            toml::Value::String(raw.to_string())
        }
    };
    let mut parts = Vec::new();
    for seg in key.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => {
                let idx = rest
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<usize>().ok())
                    .ok_or_else(|| ScenarioError::new(key, format!("bad index in {seg:?}")))?;
                (n, Some(idx))
            }
            None => (seg, None),
        };
        if name.is_empty() {
            return Err(ScenarioError::new(key, "empty key segment"));
        }
        parts.push((name.to_string(), index));
    }
    // A stage of a path the file does not declare (the default link a flow implies, or a typo)
    // has nothing to address; say so instead of failing on a half-made table later.
    if let [(p, None), (path, None), (third, idx), more @ ..] = parts.as_slice() {
        let declared = root
            .get("path")
            .and_then(|t| t.get(path.as_str()))
            .is_some();
        if p == "path"
            && !declared
            && !matches!(third.as_str(), "preset" | "next")
            && (idx.is_some() || !more.is_empty())
        {
            let implied = if matches!(path.as_str(), "fwd" | "rev") {
                " (a flow's default link is implied, not declared)"
            } else {
                ""
            };
            return Err(ScenarioError::new(
                key,
                format!(
                    "the file declares no path {path:?}{implied}: declare [path.{path}] with its \
                     [[path.{path}.stage]] tables to set a stage"
                ),
            ));
        }
    }
    set_path(root, &parts, value, key)
}

fn set_path(
    node: &mut toml::Value,
    parts: &[(String, Option<usize>)],
    value: toml::Value,
    key: &str,
) -> Result<()> {
    let toml::Value::Table(table) = node else {
        return Err(ScenarioError::new(
            key,
            "cannot set a key inside a non-table value",
        ));
    };
    let (name, index) = &parts[0];
    let rest = &parts[1..];
    if index.is_none() && !table.contains_key(name.as_str()) {
        // `path.fwd.rate.rate=…` on a path that is a preset: its stages do not exist yet.
        let preset = match table.get("preset") {
            Some(toml::Value::String(p)) => Some(p.as_str()),
            Some(toml::Value::Table(t)) => t.get("name").and_then(|v| v.as_str()),
            _ => None,
        }
        .filter(|p| PATH_PRESETS.contains(p));
        let declared = |f: &str, st: &toml::Value| st.get(f).and_then(|v| v.as_str()) == Some(name);
        let stage_here = match table.get("stage") {
            Some(toml::Value::Array(stages)) => stages
                .iter()
                .any(|st| declared("name", st) || declared("type", st)),
            _ => false,
        };
        if let (Some(preset), false, false) = (preset, stage_here, rest.is_empty()) {
            return Err(ScenarioError::new(
                key,
                format!(
                    "the path is the preset {preset:?}: its stages exist only once it is \
                     expanded, so they cannot be set by name; set the preset's knobs \
                     (path.NAME.preset.KNOB, docs/scenario.md) or write the stages out"
                ),
            ));
        }
        if let Some(toml::Value::Array(stages)) = table.get_mut("stage") {
            return set_stage_by_name(stages, name, rest, value, key);
        }
    }
    if rest.is_empty() && index.is_none() {
        table.insert(name.clone(), value);
        return Ok(());
    }
    let child = table
        .entry(name.clone())
        .or_insert_with(|| toml::Value::Table(Default::default()));
    // `flow[i].cc.beta=…` on `cc = "NAME"`: the name becomes the table's `algo`.
    if name == "cc" && !rest.is_empty() {
        if let toml::Value::String(algo) = child {
            let mut t = toml::Table::new();
            t.insert("algo".into(), toml::Value::String(std::mem::take(algo)));
            *child = toml::Value::Table(t);
        }
    }
    // `path.fwd.preset.buffer=…` on `preset = "umts-downlink"`: the name becomes the table's
    // `name` (a stage's or a path's preset alike).
    if name == "preset" && !rest.is_empty() {
        if let toml::Value::String(preset) = child {
            let mut t = toml::Table::new();
            t.insert("name".into(), toml::Value::String(std::mem::take(preset)));
            *child = toml::Value::Table(t);
        }
    }
    match (child, index) {
        (toml::Value::Array(items), Some(i)) => {
            let n = items.len();
            let item = items.get_mut(*i).ok_or_else(|| {
                ScenarioError::new(
                    key,
                    format!("index {i} out of range ({name} has {n} entries)"),
                )
            })?;
            if rest.is_empty() {
                *item = value;
                Ok(())
            } else {
                set_path(item, rest, value, key)
            }
        }
        (toml::Value::Array(items), None) => {
            for item in items.iter_mut() {
                set_path(item, rest, value.clone(), key)?;
            }
            Ok(())
        }
        (_, Some(_)) => Err(ScenarioError::new(key, format!("{name} is not an array"))),
        (child, None) => set_path(child, rest, value, key),
    }
}

/// `path.NAME.STAGE.…`: the one stage whose `name` (or, without names, whose `type`) is `stage`.
fn set_stage_by_name(
    stages: &mut [toml::Value],
    stage: &str,
    rest: &[(String, Option<usize>)],
    value: toml::Value,
    key: &str,
) -> Result<()> {
    let field = |st: &toml::Value, f: &str| st.get(f).and_then(|v| v.as_str()).map(str::to_owned);
    let by_name: Vec<usize> = (0..stages.len())
        .filter(|&i| field(&stages[i], "name").as_deref() == Some(stage))
        .collect();
    let hits = if by_name.is_empty() {
        (0..stages.len())
            .filter(|&i| field(&stages[i], "type").as_deref() == Some(stage))
            .collect()
    } else {
        by_name
    };
    match hits.as_slice() {
        [i] if rest.is_empty() => {
            stages[*i] = value;
            Ok(())
        }
        [i] => set_path(&mut stages[*i], rest, value, key),
        [] => Err(ScenarioError::new(
            key,
            format!("no stage named or of type {stage:?} in this path"),
        )),
        many => Err(ScenarioError::new(
            key,
            format!(
                "{} stages of type {stage:?} in this path; name them or use stage[i]",
                many.len()
            ),
        )),
    }
}
