//! The partition spec model (`partition_spec_v<N>` JSON) and the computation of all partition
//! values of one spec version for a whole batch.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::arrow::array::{make_array, new_null_array, Array, ArrayRef, AsArray, RecordBatch};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::compute::kernels::cast::cast_with_options;
use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crate::conform::{strict_cast, to_namespace_type};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{spec_err, Error, Result};
use crate::expr::{compile_cached, CompiledExpr};
use crate::transform::Transform;
use crate::types::{field_id, JsonDataType};

/// The spec's `transform` object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransformJson {
    /// Transform type name.
    #[serde(rename = "type")]
    pub kind: String,
    /// Number of buckets (bucket, multi_bucket).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub num_buckets: Option<i64>,
    /// Truncation width (truncate).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub width: Option<i64>,
}

/// One partition field of a spec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionField {
    /// Stable identifier; names the manifest column `partition_field_<field_id>`.
    pub field_id: String,
    /// `lance:field_id`s of the source columns, in `col0..colN` order.
    pub source_ids: Vec<i32>,
    /// A well-known transform (exactly one of `transform` / `expression`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub transform: Option<TransformJson>,
    /// A DataFusion SQL expression over `col0..colN`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expression: Option<String>,
    /// Declared result type.
    pub result_type: JsonDataType,
}

/// A partition spec version (`partition_spec_v<N>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSpec {
    /// Spec version id, the `N` of `partition_spec_v<N>`.
    pub id: i32,
    /// Partition fields, outermost namespace level first.
    pub fields: Vec<PartitionField>,
}

impl PartitionSpec {
    /// The spec with every `result_type` as a namespace stores it
    /// ([`crate::types::storage_type`]): an identity field over a column given as `string_view`
    /// or a dictionary gets the plain type, as the column itself does.
    ///
    /// # Errors
    /// `Spec` for a result type that is not valid JSON type.
    pub fn with_storage_types(&self) -> Result<Self> {
        let mut out = self.clone();
        for f in &mut out.fields {
            let dt = f.result_type.to_arrow()?;
            let stored = crate::types::storage_type(&dt);
            if stored != dt {
                f.result_type = crate::types::JsonDataType::from_arrow(&stored)?;
            }
        }
        Ok(out)
    }

    /// Parses a spec from JSON.
    ///
    /// # Errors
    /// `Spec` for malformed JSON.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| Error::Spec(format!("malformed partition spec JSON: {e}")))
    }

    /// Serialises the spec to JSON.
    ///
    /// # Errors
    /// Never in practice; serialisation of this model cannot fail.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Internal(e.to_string()))
    }
}

impl TransformJson {
    /// The validated transform.
    ///
    /// # Errors
    /// `Spec` for unknown names, missing or out-of-range parameters.
    pub fn parse(&self, field: &str) -> Result<Transform> {
        let param = |name: &str, v: Option<i64>| -> Result<i32> {
            match v {
                None => spec_err!(
                    "partition field {field:?}: transform {} needs {name}",
                    self.kind
                ),
                Some(n) if n <= 0 || n > i32::MAX as i64 => spec_err!(
                    "partition field {field:?}: {name} must be in 1..=2147483647, got {n}"
                ),
                Some(n) => Ok(n as i32),
            }
        };
        Ok(match self.kind.as_str() {
            "identity" => Transform::Identity,
            "year" => Transform::Year,
            "month" => Transform::Month,
            "day" => Transform::Day,
            "hour" => Transform::Hour,
            "bucket" => Transform::Bucket(param("num_buckets", self.num_buckets)?),
            "multi_bucket" => Transform::MultiBucket(param("num_buckets", self.num_buckets)?),
            "truncate" => Transform::Truncate(param("width", self.width)?),
            other => {
                return spec_err!(
                    "partition field {field:?}: unknown transform {other:?} (expected identity, \
                     year, month, day, hour, bucket, multi_bucket or truncate)"
                )
            }
        })
    }
}

/// How a compiled field computes its value.
#[derive(Debug)]
enum Compute {
    Transform(Transform),
    Expression(Arc<CompiledExpr>),
}

/// A source column of a partition field, resolved against the namespace schema.
#[derive(Debug, Clone)]
struct SourceColumn {
    /// The source's path from a top-level column through struct children (`["s", "city"]`);
    /// `None` when the field id is not in the schema (the column was dropped: its values
    /// read as NULL).
    path: Option<Vec<String>>,
    /// The path as users write it (`s.city`), for messages and key columns.
    name: Option<String>,
    /// The namespace type values are cast to before computing (docs/design.md, "Types used
    /// for partition values").
    data_type: DataType,
}

#[derive(Debug)]
struct CompiledField {
    field_id: String,
    sources: Vec<SourceColumn>,
    compute: Compute,
    result_type: DataType,
}

/// A spec version compiled against a namespace schema: validated once, then applied to many
/// batches.
#[derive(Debug)]
pub struct CompiledSpec {
    spec: PartitionSpec,
    fields: Vec<CompiledField>,
    output: SchemaRef,
}

impl CompiledSpec {
    /// Validates `spec` against `schema` (docs/design.md, "Partition expressions") and prepares
    /// it for evaluation.
    ///
    /// Checks: a non-empty, unique `field_id` per field; exactly one of `transform` /
    /// `expression`; at least one source; every source id present in the schema (unless
    /// `allow_missing_sources`, used when reading data written before a column was dropped);
    /// the transform accepts the source types; parameters in range; the computed type equals
    /// `result_type`.
    ///
    /// # Errors
    /// `Spec` naming the offending field; `Expression` for a bad expression.
    pub fn compile(
        spec: &PartitionSpec,
        schema: &Schema,
        allow_missing_sources: bool,
    ) -> Result<Self> {
        let by_id = fields_by_id(schema)?;
        let mut seen = HashSet::new();
        let mut fields = Vec::with_capacity(spec.fields.len());
        for pf in &spec.fields {
            let fid = &pf.field_id;
            if fid.is_empty() {
                return spec_err!("partition field ids must not be empty");
            }
            if !seen.insert(fid.clone()) {
                return spec_err!(
                    "partition field id {fid:?} appears twice in spec {}",
                    spec.id
                );
            }
            fields.push(compile_field(pf, &by_id, allow_missing_sources)?);
        }
        let output = Arc::new(Schema::new(
            fields
                .iter()
                .map(|f| Field::new(&f.field_id, f.result_type.clone(), true))
                .collect::<Vec<_>>(),
        ));
        Ok(Self {
            spec: spec.clone(),
            fields,
            output,
        })
    }

    /// The value of field `k` for one tuple of source values (pruning: the transform evaluated
    /// on a query literal). Inputs are cast to the namespace source types first (docs/design.md,
    /// "Types used for partition values").
    ///
    /// # Errors
    /// `InvalidArgument` for a wrong number of inputs or a lossy cast.
    pub fn field_value(&self, k: usize, inputs: &[ScalarValue]) -> Result<ScalarValue> {
        let f = self
            .fields
            .get(k)
            .ok_or_else(|| Error::InvalidArgument(format!("no partition field {k}")))?;
        if inputs.len() != f.sources.len() {
            return Err(Error::InvalidArgument(format!(
                "partition field {:?} has {} sources, got {} values",
                f.field_id,
                f.sources.len(),
                inputs.len()
            )));
        }
        let mut arrays = Vec::with_capacity(inputs.len());
        for (v, s) in inputs.iter().zip(&f.sources) {
            let a = v.to_array_of_size(1)?;
            let name = s.name.as_deref().unwrap_or("?");
            arrays.push(if s.data_type == DataType::Null {
                a
            } else {
                to_namespace_type(&a, &s.data_type, name)?
            });
        }
        let out = match &f.compute {
            Compute::Transform(t) => t.apply(&arrays)?,
            Compute::Expression(e) => e.evaluate(&arrays)?,
        };
        let out = if out.data_type() == &f.result_type {
            out
        } else {
            cast_with_options(out.as_ref(), &f.result_type, &strict_cast())?
        };
        Ok(ScalarValue::try_from_array(&out, 0)?)
    }

    /// The paths of field `k`'s sources (`["s", "city"]`; `None`: dropped column).
    pub fn source_paths(&self, k: usize) -> Vec<Option<Vec<String>>> {
        self.fields
            .get(k)
            .map(|f| f.sources.iter().map(|s| s.path.clone()).collect())
            .unwrap_or_default()
    }

    /// The spec this was compiled from.
    pub fn spec(&self) -> &PartitionSpec {
        &self.spec
    }

    /// The schema of [`CompiledSpec::partition_values`]' output: one nullable column per
    /// field, named by `field_id`, typed by `result_type`.
    pub fn output_schema(&self) -> SchemaRef {
        Arc::clone(&self.output)
    }

    /// Every partition value of every row of `batch`, one column per field.
    ///
    /// Input columns are matched to the namespace schema by name and cast to the namespace
    /// type first (docs/design.md, "Types used for partition values"), so the values never
    /// depend on how the writer typed its data. A source
    /// column missing from the batch (or dropped from the schema) reads as NULL.
    ///
    /// # Errors
    /// `InvalidArgument` when a column cannot be cast losslessly to its namespace type;
    /// `Expression` when an expression fails.
    pub fn partition_values(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        self.partition_values_with_threads(batch, 1)
    }

    /// [`CompiledSpec::partition_values`], computing the transforms on up to `threads`
    /// threads ([`Transform::apply_with_threads`]); the same result.
    ///
    /// # Errors
    /// As [`CompiledSpec::partition_values`].
    pub fn partition_values_with_threads(
        &self,
        batch: &RecordBatch,
        threads: usize,
    ) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut cache: HashMap<&[String], ArrayRef> = HashMap::new();
        let mut columns = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let mut inputs = Vec::with_capacity(f.sources.len());
            for s in &f.sources {
                let arr = match (&s.name, &s.path) {
                    (Some(name), Some(path)) => match cache.get(path.as_slice()) {
                        Some(a) => Arc::clone(a),
                        None => {
                            let a = match column_at(batch, path)? {
                                None => new_null_array(&s.data_type, rows),
                                Some(col) => to_namespace_type(&col, &s.data_type, name)?,
                            };
                            cache.insert(path.as_slice(), Arc::clone(&a));
                            a
                        }
                    },
                    _ => new_null_array(&DataType::Null, rows),
                };
                inputs.push(arr);
            }
            let out = match &f.compute {
                Compute::Transform(t) => t.apply_with_threads(&inputs, threads)?,
                Compute::Expression(e) => {
                    if inputs.iter().any(|a| a.data_type() == &DataType::Null) {
                        // A dropped source: compile for the runtime types.
                        let types: Vec<DataType> =
                            inputs.iter().map(|a| a.data_type().clone()).collect();
                        compile_cached(e.sql(), &types)?.evaluate(&inputs)?
                    } else {
                        e.evaluate(&inputs)?
                    }
                }
            };
            let out = if out.data_type() == &f.result_type {
                out
            } else {
                cast_with_options(out.as_ref(), &f.result_type, &strict_cast())?
            };
            columns.push(out);
        }
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.output),
            columns,
            &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }
}

/// Whether a computed type is consistent with a declared `result_type`: equal, or of the same
/// string (utf8 / large_utf8 / utf8_view) or binary family, whose layouts DataFusion picks
/// freely from version to version. Values are cast to the declared type.
fn consistent_types(computed: &DataType, declared: &DataType) -> bool {
    use DataType::*;
    let family = |t: &DataType| match t {
        Utf8 | LargeUtf8 | Utf8View => 1,
        Binary | LargeBinary | BinaryView => 2,
        _ => 0,
    };
    computed == declared || (family(computed) != 0 && family(computed) == family(declared))
}

/// A schema field found by its `lance:field_id`, at any depth.
pub(crate) struct FieldAt<'a> {
    /// Names from the top-level column down to the field (`["s", "city"]`).
    pub(crate) path: Vec<String>,
    /// The field.
    pub(crate) field: &'a Field,
    /// The field lies inside a list or map (one value per element, not per row).
    pub(crate) in_list: bool,
}

impl FieldAt<'_> {
    /// The path as users write it: `s.city`.
    pub(crate) fn dotted(&self) -> String {
        self.path.join(".")
    }
}

/// Schema fields by `lance:field_id`, top-level columns and the children of structs, lists
/// and maps (each id at most once).
pub(crate) fn fields_by_id(schema: &Schema) -> Result<HashMap<i32, FieldAt<'_>>> {
    fn visit<'a>(
        f: &'a Field,
        path: &[String],
        in_list: bool,
        out: &mut HashMap<i32, FieldAt<'a>>,
    ) -> Result<()> {
        let mut path = path.to_vec();
        path.push(f.name().clone());
        if let Some(id) = field_id(f) {
            let at = FieldAt {
                path: path.clone(),
                field: f,
                in_list,
            };
            if out.insert(id, at).is_some() {
                return spec_err!("schema field id {id} is used by more than one column");
            }
        }
        match f.data_type() {
            DataType::Struct(kids) => {
                for k in kids {
                    visit(k, &path, in_list, out)?;
                }
            }
            DataType::List(k)
            | DataType::LargeList(k)
            | DataType::ListView(k)
            | DataType::LargeListView(k)
            | DataType::FixedSizeList(k, _)
            | DataType::Map(k, _) => visit(k, &path, true, out)?,
            _ => {}
        }
        Ok(())
    }
    let mut by_id = HashMap::new();
    for f in schema.fields() {
        visit(f, &[], false, &mut by_id)?;
    }
    Ok(by_id)
}

/// The column at `path` (a top-level column, then struct children by name), NULL wherever a
/// struct on the way is NULL; `None` when the batch lacks it.
///
/// # Errors
/// `InvalidArgument` when a column on the way is not a struct.
pub(crate) fn column_at(batch: &RecordBatch, path: &[String]) -> Result<Option<ArrayRef>> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(None);
    };
    let Some(mut col) = batch.column_by_name(first).cloned() else {
        return Ok(None);
    };
    for (depth, name) in rest.iter().enumerate() {
        let Some(parent) = col.as_struct_opt() else {
            return Err(Error::InvalidArgument(format!(
                "column {:?} is of type {}, not a struct with a field {name:?}",
                path[..=depth].join("."),
                col.data_type()
            )));
        };
        let Some(child) = parent.column_by_name(name) else {
            return Ok(None);
        };
        col = match NullBuffer::union(parent.nulls(), child.nulls()) {
            Some(nulls) if child.nulls() != Some(&nulls) => {
                make_array(child.to_data().into_builder().nulls(Some(nulls)).build()?)
            }
            _ => Arc::clone(child),
        };
    }
    Ok(Some(col))
}

/// One partition field: its sources resolved, its transform or expression compiled, its
/// computed type checked against `result_type` (see `CompiledSpec::compile`).
fn compile_field(
    pf: &PartitionField,
    by_id: &HashMap<i32, FieldAt<'_>>,
    allow_missing_sources: bool,
) -> Result<CompiledField> {
    let fid = &pf.field_id;
    if pf.source_ids.is_empty() {
        return spec_err!("partition field {fid:?} has no source_ids");
    }
    let sources = pf
        .source_ids
        .iter()
        .map(|sid| match by_id.get(sid) {
            Some(at) if at.in_list => spec_err!(
                "partition field {fid:?}: source {:?} (id {sid}) lies inside a list or map, \
                 which holds many values per row; a partition source must hold one",
                at.dotted()
            ),
            Some(at) => Ok(SourceColumn {
                path: Some(at.path.clone()),
                name: Some(at.dotted()),
                data_type: at.field.data_type().clone(),
            }),
            None if allow_missing_sources => Ok(SourceColumn {
                path: None,
                name: None,
                data_type: DataType::Null,
            }),
            None => spec_err!(
                "partition field {fid:?}: source id {sid} is not a field id of the schema \
                 (lance:field_id)"
            ),
        })
        .collect::<Result<Vec<_>>>()?;
    let types: Vec<DataType> = sources.iter().map(|s| s.data_type.clone()).collect();
    let declared = pf
        .result_type
        .to_arrow()
        .map_err(|e| Error::Spec(format!("partition field {fid:?}: bad result_type: {e}")))?;
    let (compute, computed) = compile_compute(pf, &types)?;
    let any_missing = sources.iter().any(|s| s.name.is_none());
    if !any_missing && !consistent_types(&computed, &declared) {
        return spec_err!(
            "partition field {fid:?}: result_type is {declared} but the {} computes {computed}",
            if pf.transform.is_some() {
                "transform"
            } else {
                "expression"
            }
        );
    }
    Ok(CompiledField {
        field_id: fid.clone(),
        sources,
        compute,
        result_type: declared,
    })
}

impl CompiledSpec {
    /// Refuses partition value types no write could store, when a spec is created or evolved
    /// (not by its first write): a partition value is one scalar (a typed manifest column, text
    /// in paths and lineage), so nested types (structs, lists, maps, unions), run-end encodings
    /// and NULL are refused. Specs already stored are not re-checked, so they stay readable.
    ///
    /// # Errors
    /// `Spec` naming the field.
    pub fn check_value_types(&self) -> Result<()> {
        for f in &self.fields {
            check_value_type(&f.field_id, &f.result_type)?;
        }
        Ok(())
    }
}

fn check_value_type(fid: &str, dt: &DataType) -> Result<()> {
    use DataType::*;
    let refused = match dt {
        Struct(_) => Some("a struct"),
        List(_) | LargeList(_) | ListView(_) | LargeListView(_) | FixedSizeList(..) => {
            Some("a list")
        }
        Map(..) => Some("a map"),
        Union(..) => Some("a union"),
        RunEndEncoded(..) => Some("a run-end encoded array"),
        Null => Some("NULL"),
        _ => None,
    };
    match refused {
        Some(what) => spec_err!(
            "partition field {fid:?}: its value would be {what} ({dt}); a partition value is \
             one scalar (identity of a struct column: partition by one of its fields instead)"
        ),
        None => Ok(()),
    }
}

/// The transform or expression of a field, compiled for source `types`, and the type it
/// computes.
fn compile_compute(pf: &PartitionField, types: &[DataType]) -> Result<(Compute, DataType)> {
    let fid = &pf.field_id;
    match (&pf.transform, &pf.expression) {
        (Some(t), None) => {
            let t = t.parse(fid)?;
            let rt = t
                .result_type(types)
                .map_err(|e| Error::Spec(format!("partition field {fid:?}: {e}")))?;
            Ok((Compute::Transform(t), rt))
        }
        (None, Some(sql)) => {
            let c = compile_cached(sql, types).map_err(|e| match e {
                Error::Expression(m) => Error::Expression(format!("partition field {fid:?}: {m}")),
                other => other,
            })?;
            let rt = c.return_type().clone();
            Ok((Compute::Expression(c), rt))
        }
        (Some(_), Some(_)) => spec_err!(
            "partition field {fid:?} has both a transform and an expression; exactly one is \
             allowed"
        ),
        (None, None) => {
            spec_err!("partition field {fid:?} has neither a transform nor an expression")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{AsArray, Int32Array, Int64Array, StringArray};
    use crate::arrow::datatypes::Int32Type;

    fn schema() -> Schema {
        let f = |name: &str, t: DataType, id: &str| {
            Field::new(name, t, true).with_metadata(HashMap::from([(
                "lance:field_id".to_string(),
                id.to_string(),
            )]))
        };
        Schema::new(vec![
            f("id", DataType::Int64, "0"),
            f("country", DataType::Utf8, "1"),
            f("city", DataType::Utf8, "2"),
        ])
    }

    const SPEC: &str = r#"{"id":1,"fields":[
        {"field_id":"country","source_ids":[1],"transform":{"type":"identity"},"result_type":{"type":"utf8"}},
        {"field_id":"id_bucket","source_ids":[0],"transform":{"type":"bucket","num_buckets":16},"result_type":{"type":"int32"}},
        {"field_id":"region","source_ids":[1,2],"expression":"concat(col0, '/', left(col1, 2))","result_type":{"type":"utf8"}}
    ]}"#;

    #[test]
    fn computes_all_fields_and_casts_to_namespace_types() {
        let spec = PartitionSpec::from_json(SPEC).unwrap();
        let c = CompiledSpec::compile(&spec, &schema(), false).unwrap();
        // id arrives as int32: it must hash as int64 (the namespace type).
        let batch = RecordBatch::try_from_iter(vec![
            ("id", Arc::new(Int32Array::from(vec![5, 0])) as ArrayRef),
            (
                "country",
                Arc::new(StringArray::from(vec!["US", "FR"])) as ArrayRef,
            ),
            (
                "city",
                Arc::new(StringArray::from(vec!["Boston", "Paris"])) as ArrayRef,
            ),
        ])
        .unwrap();
        let out = c.partition_values(&batch).unwrap();
        assert_eq!(out.num_columns(), 3);
        let b = out.column(1).as_primitive::<Int32Type>();
        let expected = crate::hash::bucket(&Int64Array::from(vec![5i64, 0]), 16).unwrap();
        assert_eq!(b, &expected);
        assert_eq!(b.value(0), 7); // int64 5 -> bucket16 7 (hash-vectors.md)
        assert_eq!(out.column(2).as_string::<i32>().value(0), "US/Bo");
    }

    #[test]
    fn validation_names_the_field() {
        let bad = [
            (
                r#"{"field_id":"x","source_ids":[9],"transform":{"type":"identity"},"result_type":{"type":"utf8"}}"#,
                "source id 9",
            ),
            (
                r#"{"field_id":"x","source_ids":[1],"transform":{"type":"hour"},"result_type":{"type":"int32"}}"#,
                "hour",
            ),
            (
                r#"{"field_id":"x","source_ids":[1],"transform":{"type":"bucket","num_buckets":0},"result_type":{"type":"int32"}}"#,
                "num_buckets",
            ),
            (
                r#"{"field_id":"x","source_ids":[1],"transform":{"type":"identity"},"result_type":{"type":"int32"}}"#,
                "result_type",
            ),
            (
                r#"{"field_id":"x","source_ids":[1],"transform":{"type":"identity"},"expression":"col0","result_type":{"type":"utf8"}}"#,
                "exactly one",
            ),
            (
                r#"{"field_id":"x","source_ids":[1],"transform":{"type":"frobnicate"},"result_type":{"type":"utf8"}}"#,
                "unknown transform",
            ),
        ];
        for (field, needle) in bad {
            let spec =
                PartitionSpec::from_json(&format!(r#"{{"id":1,"fields":[{field}]}}"#)).unwrap();
            let err = CompiledSpec::compile(&spec, &schema(), false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle) && err.contains("\"x\""), "{err}");
        }
    }
}
