//! Plays a scenario's script against the runtime, through [`TaskSink`] (the `task` import in
//! the component, a recorder in tests).

use crate::echo::{Clock, Halt, wait};
use crate::script::{End, PartSpec, Script, Step};
use std::time::Duration;

/// What a script needs of its runtime besides waiting.
pub trait TaskSink: Clock {
    /// A status update: the Task stays `working`, without a status message.
    fn working(&mut self) -> Result<(), Halt>;
    /// An artifact update.
    fn artifact(
        &mut self,
        artifact_id: &str,
        parts: &[PartSpec],
        append: bool,
        last_chunk: bool,
    ) -> Result<(), Halt>;
}

/// How a played script ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// Every step was taken: the script's end.
    Ended(End),
    /// A step was refused or the Task was canceled.
    Halted(Halt),
}

/// The id of artifact `slot` of the run that answers the `turn`-th user message of Task
/// `task_id` (0 for the message that made the Task). Unique within the Task without keeping
/// anything between runs: an earlier turn's artifacts are never replaced.
pub fn artifact_id(task_id: &str, turn: usize, slot: usize) -> String {
    format!("{task_id}-tck-{turn}-{slot}")
}

/// Takes `script`'s steps in order, each wait `streaming_timeout` long per timeout it asks for;
/// artifact ids come from [`artifact_id`] with `turn`.
pub fn play(
    script: &Script,
    task_id: &str,
    turn: usize,
    streaming_timeout: Duration,
    sink: &mut impl TaskSink,
) -> Finish {
    for step in &script.steps {
        let taken = match step {
            Step::Working => sink.working(),
            Step::Artifact {
                slot,
                parts,
                append,
                last_chunk,
            } => sink.artifact(
                &artifact_id(task_id, turn, *slot),
                parts,
                *append,
                *last_chunk,
            ),
            Step::Wait { timeouts } => wait(sink, streaming_timeout.saturating_mul(*timeouts)),
        };
        if let Err(halt) = taken {
            return Finish::Halted(halt);
        }
    }
    Finish::Ended(script.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use crate::script::{Content, script};

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Event {
        Working,
        Artifact {
            id: String,
            texts: Vec<&'static str>,
            append: bool,
            last_chunk: bool,
        },
    }

    #[derive(Default)]
    struct Recorder {
        events: Vec<Event>,
        slept: Duration,
        /// The Task is canceled once this much time went by.
        canceled_at: Option<Duration>,
        /// Every update answers this.
        refuse: Option<Halt>,
    }

    impl Clock for Recorder {
        fn is_canceled(&mut self) -> bool {
            self.canceled_at.is_some_and(|at| self.slept >= at)
        }
        fn sleep(&mut self, pause: Duration) {
            self.slept += pause;
        }
    }

    impl TaskSink for Recorder {
        fn working(&mut self) -> Result<(), Halt> {
            self.refuse.clone().map_or(Ok(()), Err)?;
            self.events.push(Event::Working);
            Ok(())
        }
        fn artifact(
            &mut self,
            artifact_id: &str,
            parts: &[PartSpec],
            append: bool,
            last_chunk: bool,
        ) -> Result<(), Halt> {
            self.refuse.clone().map_or(Ok(()), Err)?;
            let texts = parts
                .iter()
                .map(|p| match p.content {
                    Content::Text(t) | Content::Url(t) | Content::Data(t) => t,
                    Content::Raw(_) => "<raw>",
                })
                .collect();
            self.events.push(Event::Artifact {
                id: artifact_id.to_owned(),
                texts,
                append,
                last_chunk,
            });
            Ok(())
        }
    }

    const TIMEOUT: Duration = Duration::from_secs(2);

    #[test]
    fn a_streaming_scenario_emits_working_then_its_artifact() {
        let mut r = Recorder::default();
        let finish = play(&script(Scenario::Stream001), "t1", 0, TIMEOUT, &mut r);
        assert_eq!(finish, Finish::Ended(End::Completed(None)));
        assert_eq!(
            r.events,
            [
                Event::Working,
                Event::Artifact {
                    id: "t1-tck-0-0".into(),
                    texts: vec!["Stream hello from TCK"],
                    append: false,
                    last_chunk: true,
                }
            ]
        );
    }

    #[test]
    fn chunks_build_one_artifact() {
        let mut r = Recorder::default();
        play(
            &script(Scenario::StreamArtifactChunked),
            "t",
            1,
            TIMEOUT,
            &mut r,
        );
        let artifacts: Vec<(String, bool, bool)> = r
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Artifact {
                    id,
                    append,
                    last_chunk,
                    ..
                } => Some((id.clone(), *append, *last_chunk)),
                Event::Working => None,
            })
            .collect();
        assert_eq!(
            artifacts,
            [
                ("t-tck-1-0".to_owned(), false, false),
                ("t-tck-1-0".to_owned(), true, true)
            ]
        );
    }

    #[test]
    fn the_long_running_scenario_waits_two_timeouts() {
        let mut r = Recorder::default();
        let finish = play(&script(Scenario::LongRunning), "t", 0, TIMEOUT, &mut r);
        assert_eq!(finish, Finish::Ended(End::Completed(None)));
        assert_eq!(r.slept, 2 * TIMEOUT);
        assert_eq!(r.events, [Event::Working]);
    }

    #[test]
    fn a_cancel_ends_the_wait_early() {
        let mut r = Recorder {
            canceled_at: Some(Duration::from_millis(300)),
            ..Recorder::default()
        };
        let finish = play(&script(Scenario::LongRunning), "t", 0, TIMEOUT, &mut r);
        assert_eq!(finish, Finish::Halted(Halt::Stopped));
        assert!(r.slept < Duration::from_millis(400), "{:?}", r.slept);
    }

    #[test]
    fn a_refused_update_halts_the_script() {
        let mut r = Recorder {
            refuse: Some(Halt::Failed("too big".into())),
            ..Recorder::default()
        };
        let finish = play(&script(Scenario::ArtifactText), "t", 0, TIMEOUT, &mut r);
        assert_eq!(finish, Finish::Halted(Halt::Failed("too big".into())));
        assert!(r.events.is_empty());
    }

    #[test]
    fn turns_keep_artifact_ids_apart() {
        assert_ne!(artifact_id("t", 0, 0), artifact_id("t", 1, 0));
        assert_ne!(artifact_id("t", 0, 0), artifact_id("t", 0, 1));
        assert_ne!(artifact_id("t", 0, 0), crate::echo::reply_artifact_id("t"));
    }
}
