//! What a tool call that should have been stopped returned: the reason of a refusal or the
//! message of a failure, or a panic naming what came back instead.

use aria_api::{ToolError, ToolOutput};

#[track_caller]
pub fn refused(r: Result<ToolOutput, ToolError>) -> String {
    match r {
        Err(ToolError::Refused { reason }) => reason,
        other => panic!("expected Refused, got {other:?}"),
    }
}

#[track_caller]
pub fn failed(r: Result<ToolOutput, ToolError>) -> String {
    match r {
        Err(ToolError::Failed { message }) => message,
        other => panic!("expected Failed, got {other:?}"),
    }
}
