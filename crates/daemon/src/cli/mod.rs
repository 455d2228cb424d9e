//! One module per command of the `filprove` binary.
