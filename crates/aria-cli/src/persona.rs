//! Personas: a style layer over an agent's final answer. ARIA ships `friendly`
//! (`personas/friendly.toml` in the repository); more are files in `$ARIA_HOME/personas/`
//! (`NAME.toml`: `name`, `style_prompt`, `banned_topics`). The rewrite itself and its checks
//! are `aria_core::restyle` and `Agent::restyle` (which audits `persona.restyle`); this module
//! finds the persona. The journal keeps the run's own answer: a persona never changes what the
//! next turn is built from.

use std::path::{Path, PathBuf};

use aria_core::Persona;

use crate::exit::{CliError, CliResult};

/// The persona that ships with ARIA.
const FRIENDLY: &str = include_str!("../../../personas/friendly.toml");

fn file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("personas").join(format!("{name}.toml"))
}

/// The persona `name`: `$ARIA_HOME/personas/NAME.toml`, else the shipped one of that name.
pub fn load(data_dir: &Path, name: &str) -> CliResult<Persona> {
    let path = file(data_dir, name);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && name == "friendly" => {
            FRIENDLY.to_owned()
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::usage(format!(
                "there is no persona {name}: write {} (name, style_prompt, banned_topics), or \
                 use the shipped persona friendly",
                path.display()
            )));
        }
        Err(e) => {
            return Err(CliError::usage(format!("cannot read {}: {e}", path.display())));
        }
    };
    let persona: Persona =
        toml::from_str(&text).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    if persona.style_prompt.trim().is_empty() {
        return Err(CliError::usage(format!("{}: style_prompt is empty", path.display())));
    }
    Ok(persona)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_persona_loads_and_a_file_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = load(dir.path(), "friendly").unwrap();
        assert_eq!(shipped.name, "friendly");
        assert!(shipped.banned_topics.contains(&"politics".to_owned()));
        std::fs::create_dir_all(dir.path().join("personas")).unwrap();
        std::fs::write(
            file(dir.path(), "friendly"),
            "name = \"friendly\"\nstyle_prompt = \"Be terse.\"\n",
        )
        .unwrap();
        assert_eq!(load(dir.path(), "friendly").unwrap().style_prompt, "Be terse.");
        let missing = load(dir.path(), "pirate").unwrap_err();
        assert!(format!("{:#}", missing.error).contains("personas/pirate.toml"));
        std::fs::write(file(dir.path(), "bad"), "name = \"bad\"\ncolour = 1\n").unwrap();
        assert!(format!("{:#}", load(dir.path(), "bad").unwrap_err().error).contains("bad.toml"));
    }
}
