//! `aria model pull|list`.

use crate::app;
use crate::cli::{GlobalArgs, ModelCommand};
use crate::exit::CliResult;

pub fn model(global: &GlobalArgs, command: ModelCommand) -> CliResult<u8> {
    let config = app::load_config(global)?;
    #[cfg(feature = "local")]
    {
        match command {
            ModelCommand::Pull { names, recommended: false } => {
                crate::local::pull_command(&config, &names)
            }
            ModelCommand::Pull { recommended: true, .. } => crate::local::pull_recommended(&config),
            ModelCommand::List { json } => crate::local::list_command(&config, json),
        }
    }
    #[cfg(not(feature = "local"))]
    {
        let _ = (config, command);
        Err(crate::exit::CliError::config(anyhow::anyhow!(
            "this `aria` was built without the `local` feature, so it has no embedded models; \
             rebuild with default features"
        )))
    }
}
