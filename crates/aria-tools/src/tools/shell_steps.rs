//! Walks the steps of a planned command line: `&&` / `||` / `;` gates, and `if` steps whose
//! conditions run first and whose branch is chosen by their exit status (bash's rules: the
//! first condition that exits 0 picks its branch, else the `else` branch; an `if` where no
//! branch ran exits 0).
//!
//! The plan holds what was checked for every simple command in document order (conditions,
//! then branches, then `else`); the walker takes each command's share as it meets it and
//! passes over the shares of the parts that do not run, so a command always runs with the
//! argv, directory and redirect targets that were checked for it.

use std::path::PathBuf;
use std::time::Instant;

use crate::confine::Access;
use crate::guard::path::PathGuard;
use crate::shell::builtin::Builtin;
use crate::shell::{Body, Conditional, RunIf, Script, Step};
use crate::tools::shell_execute::{Collected, Stages, Target, collect_pipeline, start_pipeline};
use crate::tools::shell_line::{self, Evaluated};

/// What the plan checked for each simple command, in document order.
pub(super) struct Checked {
    pub targets: std::vec::IntoIter<Vec<Option<Target>>>,
    pub argvs: std::vec::IntoIter<Vec<String>>,
    pub cwds: std::vec::IntoIter<PathBuf>,
    pub builtins: std::vec::IntoIter<Option<Builtin>>,
}

impl Checked {
    /// Passes over the next `n` commands (a part that does not run).
    fn skip(&mut self, n: usize) {
        self.take(n);
    }

    fn take(&mut self, n: usize) -> (Stages, Vec<Option<Builtin>>) {
        let stages = Stages {
            targets: self.targets.by_ref().take(n).collect(),
            argvs: self.argvs.by_ref().take(n).collect(),
            cwds: self.cwds.by_ref().take(n).collect(),
        };
        (stages, self.builtins.by_ref().take(n).collect())
    }
}

/// The state of one running line.
pub(super) struct Walker<'g> {
    pub guard: &'g PathGuard,
    pub access: Access,
    pub deadline: Instant,
    pub checked: Checked,
    pub all: Collected,
    pub exports: Vec<(String, String)>,
    /// Pipelines (and in-process builtins) that ran.
    pub ran: usize,
    /// Set when a `cd` did not run: nothing after it runs.
    pub stopped: bool,
}

impl Walker<'_> {
    /// Runs `steps` in order, each gated on the status the step before it left.
    pub fn steps(&mut self, steps: Vec<Step>) {
        for step in steps {
            let n = commands_in(&step);
            if self.stopped || self.all.timed_out || !self.gate(step.run_if) {
                let (_, builtins) = self.checked.take(n);
                // The plan gave every later command the directory this `cd` enters.
                if let (false, false, Some(Some(Builtin::Cd(dir)))) =
                    (self.stopped, self.all.timed_out, builtins.first())
                {
                    self.all.stderr.push_str(&format!(
                        "aria: stopped: `cd {dir}` did not run, so the commands after it were \
                         not run either\n"
                    ));
                    self.stopped = true;
                }
                continue;
            }
            match step.body {
                Body::Pipeline(pipeline) => self.pipeline(pipeline.commands),
                Body::If(conditional) => self.conditional(*conditional),
            }
        }
    }

    fn gate(&self, run_if: RunIf) -> bool {
        match run_if {
            RunIf::Always => true,
            RunIf::Success => self.all.status == 0,
            RunIf::Failure => self.all.status != 0,
        }
    }

    fn pipeline(&mut self, commands: Vec<crate::shell::SimpleCommand>) {
        let n = commands.len();
        let (stages, builtins) = self.checked.take(n);
        self.ran += 1;
        let evaluated = match (builtins.first(), commands.first()) {
            (Some(Some(b)), _) if n == 1 => Some(shell_line::eval_builtin(b, &mut self.exports)),
            (_, Some(cmd)) if n == 1 => shell_line::eval_simple(cmd),
            _ => None,
        };
        if let Some(Evaluated { status, stdout, stderr }) = evaluated {
            self.all.status = status;
            self.all.stdout.push_str(&stdout);
            self.all.stderr.push_str(&stderr);
            return;
        }
        let started = start_pipeline(
            self.guard,
            self.access,
            &commands,
            stages,
            &self.exports,
            self.deadline,
        );
        collect_pipeline(started, &mut self.all);
    }

    /// The conditions in order until one exits 0, then its branch; the parts passed over
    /// give up their share of the plan.
    fn conditional(&mut self, conditional: Conditional) {
        let Conditional { arms, otherwise } = conditional;
        let mut rest: Vec<Script> = Vec::new();
        let mut chosen: Option<Script> = None;
        let mut arms = arms.into_iter();
        for arm in arms.by_ref() {
            self.steps(arm.condition.steps);
            if self.all.status == 0 && !self.stopped && !self.all.timed_out {
                chosen = Some(arm.then);
                break;
            }
            self.checked.skip(arm.then.commands().count());
        }
        for arm in arms {
            rest.push(arm.condition);
            rest.push(arm.then);
        }
        match chosen {
            Some(branch) => {
                self.steps(branch.steps);
                rest.extend(otherwise);
            }
            None => match otherwise {
                Some(branch) => self.steps(branch.steps),
                // No branch ran: the `if` exits 0.
                None => self.all.status = 0,
            },
        }
        for part in rest {
            self.checked.skip(part.commands().count());
        }
    }
}

/// Simple commands in a step, inside an `if` too.
fn commands_in(step: &Step) -> usize {
    match &step.body {
        Body::Pipeline(p) => p.commands.len(),
        Body::If(c) => c.parts().map(|s| s.commands().count()).sum(),
    }
}

/// The lines a dry run shows for `steps`, nested parts indented.
pub(super) fn describe(steps: &[Step], indent: usize, lines: &mut Vec<String>) {
    let pad = "  ".repeat(indent);
    for step in steps {
        let gate = match step.run_if {
            RunIf::Always => "run",
            RunIf::Success => "if the previous step succeeded, run",
            RunIf::Failure => "if the previous step failed, run",
        };
        match &step.body {
            Body::Pipeline(p) => {
                let stages: Vec<String> =
                    p.commands.iter().map(|c| c.argv().collect::<Vec<_>>().join(" ")).collect();
                lines.push(format!("{pad}{gate}: {}", stages.join(" | ")));
            }
            Body::If(c) => {
                for (i, arm) in c.arms.iter().enumerate() {
                    let head = if i == 0 { format!("{gate}: if") } else { "elif".to_owned() };
                    lines.push(format!("{pad}{head}"));
                    describe(&arm.condition.steps, indent + 1, lines);
                    lines.push(format!("{pad}then"));
                    describe(&arm.then.steps, indent + 1, lines);
                }
                if let Some(o) = &c.otherwise {
                    lines.push(format!("{pad}else"));
                    describe(&o.steps, indent + 1, lines);
                }
                lines.push(format!("{pad}fi"));
            }
        }
    }
}
