mod answer_tests;
mod filter_tests;
mod harness;
mod loop_tests;
mod policy_tests;
mod spend_tests;
