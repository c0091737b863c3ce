//! [`Decision`]: what each `AgentHook` method answers, from the decision that ended its chain.

use crate::hooks::external::run::chain::ChainControl;
use crate::hooks::{Flow, ResponseAction, StopAction, ToolAction};

/// A method's answer from the decision that ended the chain. A decision an answer cannot take
/// is its default (`apply` lets no such decision through: a `skip` only ends a tool chain).
pub(super) trait Decision: Default {
    fn stop(_reason: String) -> Self {
        Self::default()
    }
    fn skip(_reason: String) -> Self {
        Self::default()
    }
    fn retry(_feedback: String) -> Self {
        Self::default()
    }
    fn ask(_reason: String) -> Self {
        Self::default()
    }
}

/// No decision: the default answer (go on, run the tool, finish).
pub(super) fn decide<A: Decision>(control: Option<ChainControl>) -> A {
    match control {
        None => A::default(),
        Some(ChainControl::Stop(reason)) => A::stop(reason),
        Some(ChainControl::Skip(reason)) => A::skip(reason),
        Some(ChainControl::Retry(feedback)) => A::retry(feedback),
        Some(ChainControl::Ask(reason)) => A::ask(reason),
    }
}

impl Decision for () {}

impl Decision for Flow {
    fn stop(reason: String) -> Self {
        Flow::Stop { reason }
    }
    fn skip(reason: String) -> Self {
        Flow::Skip { reason }
    }
    fn retry(feedback: String) -> Self {
        Flow::Retry { feedback }
    }
}

impl Decision for ResponseAction {
    fn stop(reason: String) -> Self {
        ResponseAction::Stop { reason }
    }
    fn retry(feedback: String) -> Self {
        ResponseAction::Retry { feedback }
    }
}

impl Decision for ToolAction {
    fn stop(reason: String) -> Self {
        ToolAction::Stop { reason }
    }
    fn skip(reason: String) -> Self {
        ToolAction::Skip { reason }
    }
    /// A `retry_feedback` before a tool (the jcli format's): it does not run, the model gets the
    /// feedback.
    fn retry(feedback: String) -> Self {
        ToolAction::Skip { reason: feedback }
    }
    fn ask(reason: String) -> Self {
        ToolAction::Ask { reason }
    }
}

impl Decision for StopAction {
    fn stop(reason: String) -> Self {
        StopAction::Stop { reason }
    }
    fn retry(feedback: String) -> Self {
        StopAction::Continue { feedback }
    }
}
