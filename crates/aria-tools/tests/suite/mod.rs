mod file_tools;
mod fixture;
mod path_create;
mod path_guard;
mod path_props;
mod read_text;
mod secrets;
mod secrets_props;
