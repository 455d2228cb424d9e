//! `filprove vram-plan`: the device-memory plan of one partition (what the GPU backend
//! allocates in each phase, the peak, and whether parameters stay resident) for a circuit
//! and a GPU memory size - the same plan the backend enforces.

use anyhow::Context;
use clap::Args;
use filprove_cuda::plan::{plan, PlanInput, Shape};
use filprove_engine::filecoin::{circuit_spec, partition_shape};

/// Arguments of `filprove vram-plan`.
#[derive(Args, Debug)]
pub struct VramPlanArgs {
    /// Circuit: a short name (porep-32g, wpost-32g, snap-32g, winning-32g, porep-2k, ...).
    #[arg(long, default_value = "porep-32g")]
    pub circuit: String,
    /// Device memory the backend may use, e.g. 141GiB (an H200), 24GiB, 16GiB.
    #[arg(long, default_value = "139GiB")]
    pub gpu_memory: String,
    /// Partitions staged at once (GPU workers per device).
    #[arg(long, default_value_t = 2)]
    pub workers: u64,
    /// Plan as if parameter residency were switched off.
    #[arg(long)]
    pub no_resident: bool,
    /// Largest MSM batch in points (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub max_batch: u64,
}

/// The partition shape of a circuit: the measured shapes of the 32 GiB circuits
/// (docs/reference/circuits.md), else the measured per-partition sizes with A and B
/// lengths estimated from PoRep's densities.
pub fn shape_of(circuit: &str) -> anyhow::Result<Shape> {
    let spec = circuit_spec(circuit).with_context(|| {
        format!("unknown circuit {circuit:?} (e.g. porep-32g, wpost-32g, snap-32g, porep-2k)")
    })?;
    Ok(match spec.short_name.as_str() {
        "porep-32g" => Shape::porep_32g(),
        "wpost-32g" => Shape::wpost_32g(),
        "snap-32g" => Shape::snap_32g(),
        _ => {
            let (constraints, aux) = partition_shape(spec.kind, spec.sector_size);
            // A is nearly dense (99.7 % of aux on PoRep), B about a quarter.
            let h = constraints.next_power_of_two() - 1;
            Shape::from_srs_lengths(h, aux, aux, aux.div_ceil(4))
        }
    })
}

/// Prints the plan.
pub fn run(args: VramPlanArgs) -> anyhow::Result<()> {
    let budget = crate::server::config::parse_size(&args.gpu_memory)
        .ok()
        .flatten()
        .with_context(|| format!("--gpu-memory {}: expected e.g. 24GiB", args.gpu_memory))?;
    let shape = shape_of(&args.circuit)?;
    let p = plan(
        shape,
        PlanInput {
            budget,
            staging_slots: args.workers,
            allow_resident: !args.no_resident,
            allow_folded_h: !args.no_resident,
            max_batch: args.max_batch,
        },
    )
    .map_err(anyhow::Error::msg)?;
    println!("circuit: {}", args.circuit);
    print!("{p}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::shape_of;

    #[test]
    fn the_32_gib_shapes_read_as_large_as_their_parameter_files() {
        // docs/reference/circuits.md: the `.params` files of the 32 GiB circuits; the proof
        // reads all of a file but its verifying key.
        for (circuit, file_gb) in [
            ("porep-32g", 47.37),
            ("wpost-32g", 60.8),
            ("snap-32g", 34.5),
        ] {
            let gb = shape_of(circuit).unwrap().srs_bytes() as f64 / 1e9;
            assert!((gb - file_gb).abs() < 0.02 * file_gb, "{circuit}: {gb} GB");
        }
    }
}
