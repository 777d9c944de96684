mod egress;
mod isolation;
mod sandbox;
