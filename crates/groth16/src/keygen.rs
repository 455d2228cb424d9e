//! (filled in by the keygen work)
