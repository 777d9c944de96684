//! Embedded local models for ARIA: not built yet (see the issue "Embedded local models").
