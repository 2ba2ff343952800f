//! `lance_partitioned._native`: thin pyo3 bindings over `lance-partitioned-core`.
//!
//! Each function converts its arguments (Arrow through the PyCapsule interface, zero copy),
//! releases the GIL, calls the core, and converts the result back. Errors become the typed
//! exceptions of [`errors`]; panics are caught and reported as `InternalError`.

use pyo3::prelude::*;

mod allocator;
mod args;
mod datafusion_table;
mod distributed_merge;
mod errors;
mod ffi;
mod indexes;
mod join;
mod kernels;
mod lineage;
mod merge;
mod namespace;
mod planned;
mod results;
mod runtime;
mod snapshot;
mod values;
mod writes;

use errors::run;

/// Set to `1` by the test suite (`tests/conftest.py`) before the import: the module then also
/// has the test-only functions. One build serves the tests and the wheel; users never see them.
const TEST_HOOKS_ENV: &str = "LANCE_PARTITIONED_TEST_HOOKS";

/// Panics inside the guarded Rust section; proves that no panic crosses into Python (the
/// test suite expects `InternalError`). Registered only under [`TEST_HOOKS_ENV`].
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    run(py, || -> lance_partitioned_core::Result<()> {
        panic!("deliberate panic for the FFI guard test")
    })
}

/// The test-only functions, when the test suite asked for them.
fn add_test_hooks(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if std::env::var_os(TEST_HOOKS_ENV).is_some_and(|v| v == "1") {
        m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
        m.add_function(wrap_pyfunction!(allocator::_allocator_purge_delay_ms, m)?)?;
        m.add_function(wrap_pyfunction!(allocator::_allocator_allow_thp, m)?)?;
    }
    Ok(())
}

/// The threads of Lance's compute pool (page encoding) in this process: every core unless
/// `LANCE_CPU_THREADS` says otherwise (see `size_lance_compute_pool`).
#[pyfunction]
fn lance_compute_threads() -> usize {
    lance_partitioned_core::ns::infra::session::size_lance_compute_pool()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    allocator::tune();
    lance_partitioned_core::ns::infra::session::size_lance_compute_pool();
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The write defaults, defined once (in the core crate) for Python's signatures.
    {
        use lance_partitioned_core::ns::write::options as opts;
        m.add("MAX_ROWS_PER_FILE", opts::MAX_ROWS_PER_FILE)?;
        m.add("WRITE_CONCURRENCY", opts::WRITE_CONCURRENCY)?;
        m.add("WRITE_BUFFER_BYTES", opts::WRITE_BUFFER_BYTES)?;
        m.add(
            "DEFAULT_MAX_NEW_PARTITIONS",
            opts::DEFAULT_MAX_NEW_PARTITIONS,
        )?;
    }
    m.add_function(wrap_pyfunction!(lance_compute_threads, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::murmur3, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::murmur3_multi, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::bucket, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::multi_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::temporal, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::truncate, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::expression_type, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::partition_values, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::validate_spec, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::route_batch, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::schema_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::schema_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::check_input_schema, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::assign_field_ids, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(join::join_plan, m)?)?;
    m.add_function(wrap_pyfunction!(join::join_prepare, m)?)?;
    m.add_class::<join::Join>()?;
    m.add_function(wrap_pyfunction!(values::value_to_string, m)?)?;
    m.add_function(wrap_pyfunction!(values::value_from_string, m)?)?;
    m.add_function(wrap_pyfunction!(values::values_to_strings, m)?)?;
    m.add_function(wrap_pyfunction!(values::hive_escape, m)?)?;
    m.add_function(wrap_pyfunction!(values::hive_unescape, m)?)?;
    m.add_function(wrap_pyfunction!(values::uri_escape, m)?)?;
    m.add_function(wrap_pyfunction!(values::hive_segment, m)?)?;
    m.add_function(wrap_pyfunction!(values::parse_hive_segment, m)?)?;
    m.add_function(wrap_pyfunction!(lineage::filter_condition, m)?)?;
    add_test_hooks(m)?;
    m.add_class::<writes::DistributedWrite>()?;
    m.add_class::<distributed_merge::DistributedMerge>()?;
    m.add_class::<writes::KeyHasher>()?;
    m.add_class::<results::WriteResult>()?;
    m.add_class::<results::DeleteResult>()?;
    m.add_class::<results::CleanupResult>()?;
    m.add_class::<results::OptimizeResult>()?;
    m.add_class::<indexes::IndexResult>()?;
    m.add_class::<indexes::IndexInfo>()?;
    m.add_class::<datafusion_table::DataFusionTable>()?;
    m.add_class::<results::ExpireResult>()?;
    m.add_class::<results::TouchedPartition>()?;
    m.add_class::<merge::MergeResult>()?;
    m.add_class::<merge::MergePlan>()?;
    m.add_class::<merge::MergedPartitionResult>()?;
    m.add_class::<namespace::Namespace>()?;
    m.add_class::<snapshot::ManifestSnapshot>()?;
    m.add_class::<snapshot::Scan>()?;
    Ok(())
}
