mod egress;
mod isolation;
mod lifetime;
mod sandbox;
