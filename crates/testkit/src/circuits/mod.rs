//! The circuits the crates' tests prove. Each allocates its public inputs after bellperson's
//! ONE, and knows its public inputs (without ONE) so that proofs can be verified.

mod chain;
mod inputs_only;
mod mix;
mod random_r1cs;

pub use chain::Chain;
pub use inputs_only::InputsOnly;
pub use mix::Mix;
pub use random_r1cs::RandomR1cs;
