mod isolation;
mod sandbox;
