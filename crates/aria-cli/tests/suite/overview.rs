//! The project map the model gets up front when ARIA works in a project.

use aria_testkit::openai_mock::{MockOpenAi, MockTurn};

use super::harness::{Aria, code, text};

#[test]
fn asked_what_the_project_does_the_model_already_has_its_map() {
    let aria = Aria::new();
    let root = aria.root();
    std::fs::write(root.join("README.md"), "# pricer\n\nComputes shop prices with VAT.\n").unwrap();
    std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"pricer\"\n").unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    let mock = MockOpenAi::new(vec![MockTurn::text("It computes shop prices with VAT.")]).serve();
    let out = aria.run(&mock.base_url(), &["run", "--task", "What does this project do?"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let system = mock.requests()[0]["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("Project overview of"), "{system}");
    assert!(system.contains("Computes shop prices with VAT."), "{system}");
    assert!(system.contains("language: Python") && system.contains("`pytest`"), "{system}");
    assert!(system.contains("tests/"), "{system}");
}
