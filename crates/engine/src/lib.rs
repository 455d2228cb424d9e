//! The proving engine (in progress).
