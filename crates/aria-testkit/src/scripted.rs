//! Scripted in-process provider (being written).
