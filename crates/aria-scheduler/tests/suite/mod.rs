mod reference;
mod schedule_tool;
