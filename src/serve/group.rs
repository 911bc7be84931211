//! Group commit: concurrent requests for the events of one machine share
//! one transaction, and so one commit (one fsync), and each is answered
//! only once that commit has returned.
//!
//! A request joins its machine's queue. While fewer than
//! `Options::committers` groups of that machine are being committed, it
//! also starts a committer task, which takes everything waiting (at most
//! [`MAX_GROUP`]) as one group, applies it with `apply_batch_at` and
//! answers each member; then it takes what queued meanwhile, and stops
//! when nothing is waiting. Nothing waits on purpose: a lone request is a
//! group of one at once, and groups grow only while the committers are
//! busy, from the requests that arrived during their commits.
//!
//! Each member gets the answer `apply` would have given it: `apply_batch_at`
//! answers every event as if applied alone in order (a duplicate from its
//! frozen response, a conflict, an event its process cannot take), and
//! those answers write nothing for that member and do not touch the
//! others. Members for one process are applied in the order they queued.
//! A lost race with another writer starts the whole group over from the
//! fresher rows; a store error rolls the whole group back, and every member
//! gets it (503, nothing written, send again), as a lone `apply` would.
//! A panic in a group's apply answers its members so too, and its
//! committer's place passes on (`Place`).
//! The committer is a task of its own, so a client that goes away cancels
//! nothing of the others' transaction.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, watch};

use super::Service;
use crate::expr::Event;
use crate::runtime::{self, Outcome, RuntimeError, nonblocking};
use crate::store::StoreError;

/// The most requests one group holds: a larger backlog is committed as
/// several groups, so that one transaction stays short.
pub const MAX_GROUP: usize = 64;

/// The queue of one machine's requests.
pub(super) struct Group {
    queue: Mutex<Queue>,
    /// How many requests are waiting, for tests that must know a group
    /// has formed.
    waiting: watch::Sender<usize>,
    /// How many of the next groups panic in their apply, for the test that
    /// a panic gives its committer's place back.
    #[cfg(test)]
    panics: std::sync::atomic::AtomicUsize,
}

struct Queue {
    members: VecDeque<Member>,
    /// Committer tasks running for this machine.
    committers: usize,
}

/// One request: its event, and where its answer goes.
struct Member {
    process: String,
    event: Event,
    answer: oneshot::Sender<Result<Outcome, RuntimeError>>,
}

impl Group {
    pub(super) fn new() -> Group {
        Group {
            queue: Mutex::new(Queue {
                members: VecDeque::new(),
                committers: 0,
            }),
            waiting: watch::channel(0).0,
            #[cfg(test)]
            panics: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Applies `event` to `process` of `machine` in the next group, and answers
/// once its commit has returned.
pub(super) async fn apply(
    service: &Arc<Service>,
    machine: &str,
    process: &str,
    event: &Event,
) -> Result<Outcome, RuntimeError> {
    let Some(group) = service.groups.get(machine) else {
        return Err(stopped());
    };
    let (answer, answered) = oneshot::channel();
    let start = {
        let mut queue = group.lock();
        queue.members.push_back(Member {
            process: process.to_string(),
            event: event.clone(),
            answer,
        });
        group.waiting.send_replace(queue.members.len());
        let start = queue.committers < service.options.committers.max(1);
        if start {
            queue.committers += 1;
        }
        start
    };
    if start {
        tokio::spawn(commit(Arc::clone(service), machine.to_string()));
    }
    answered.await.unwrap_or_else(|_| Err(stopped()))
}

/// A request whose committer went away without an answer (it cannot,
/// short of a panic): nothing is known to be written, as for a store error.
fn stopped() -> RuntimeError {
    RuntimeError::Store(StoreError::Backend("the group's committer stopped".into()))
}

/// Commits the groups of `machine` until none is waiting.
async fn commit(service: Arc<Service>, machine: String) {
    let mut place = Place {
        service: Arc::clone(&service),
        machine: machine.clone(),
        held: true,
    };
    let (Some(group), Some(chart)) = (service.groups.get(&machine), service.charts.get(&machine))
    else {
        return;
    };
    loop {
        let members: Vec<Member> = {
            let mut queue = group.lock();
            if queue.members.is_empty() {
                queue.committers -= 1;
                place.held = false;
                return;
            }
            let take = queue.members.len().min(MAX_GROUP);
            let members = queue.members.drain(..take).collect();
            group.waiting.send_replace(queue.members.len());
            members
        };
        service.metrics.grouped(members.len());
        let (events, answers): (Vec<(String, Event)>, Vec<_>) = members
            .into_iter()
            .map(|member| ((member.process, member.event), member.answer))
            .unzip();
        #[cfg(test)]
        group.panic_if_asked();
        let now = runtime::now_millis();
        match nonblocking::apply_batch_at(&service.store, chart, &events, now).await {
            Ok(outcomes) => {
                for (answer, outcome) in answers.into_iter().zip(outcomes) {
                    // A client that went away needs no answer.
                    let _ = answer.send(outcome);
                }
            }
            Err(error) => {
                for answer in answers {
                    let _ = answer.send(Err(error.clone()));
                }
            }
        }
    }
}

/// A committer's place among its machine's `Options::committers`. A
/// committer gives it back when it finds the queue empty; one that ends
/// any other way (a panic in its group's apply unwinds through it) would
/// keep it for ever, and once every place was kept the machine's requests
/// would wait for ever. Dropped so, the place passes to a new committer
/// for the requests waiting, or is given back when none is. The members of
/// the group that panicked are answered by their dropped senders
/// (`stopped`).
struct Place {
    service: Arc<Service>,
    machine: String,
    /// Whether the place is still taken by this committer.
    held: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        let Some(group) = self.service.groups.get(&self.machine).filter(|_| self.held) else {
            return;
        };
        let mut queue = group.lock();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !queue.members.is_empty() => {
                drop(queue);
                runtime.spawn(commit(Arc::clone(&self.service), self.machine.clone()));
            }
            _ => queue.committers -= 1,
        }
    }
}

#[cfg(test)]
impl Group {
    /// Makes the next `n` groups panic in their apply.
    pub(super) fn panic_next(&self, n: usize) {
        self.panics.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    fn panic_if_asked(&self) {
        use std::sync::atomic::Ordering;
        let asked = self
            .panics
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if asked.is_ok() {
            panic!("a group's apply panicked, as the test asked");
        }
    }
}

#[cfg(test)]
impl Service {
    /// Takes every committer's place for `machine` until the guard drops,
    /// so that the requests sent meanwhile wait and then form one group.
    pub(super) fn hold_committers(self: &Arc<Service>, machine: &str) -> HeldCommitters {
        let group = &self.groups[machine];
        let held = self.options.committers.max(1);
        group.lock().committers += held;
        HeldCommitters {
            service: Arc::clone(self),
            machine: machine.to_string(),
            held,
        }
    }

    /// Waits until `n` requests of `machine` are queued.
    pub(super) async fn queued(&self, machine: &str, n: usize) {
        let mut waiting = self.groups[machine].waiting.subscribe();
        let _ = waiting.wait_for(|queued| *queued >= n).await;
    }
}

#[cfg(test)]
pub(super) struct HeldCommitters {
    service: Arc<Service>,
    machine: String,
    held: usize,
}

#[cfg(test)]
impl Drop for HeldCommitters {
    /// Gives the places back and starts one committer for what queued.
    fn drop(&mut self) {
        let group = &self.service.groups[&self.machine];
        group.lock().committers -= self.held - 1;
        tokio::spawn(commit(Arc::clone(&self.service), self.machine.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::super::tests::counter_service;

    /// Posts `body` as an event to process `process` under `key`: the
    /// status, whether it was a replay, and the body.
    async fn post(
        address: std::net::SocketAddr,
        process: &str,
        key: &str,
        body: &'static str,
    ) -> (u16, bool, String) {
        let url = format!("http://{address}/machines/counter/processes/{process}/events");
        let response = reqwest::Client::new()
            .post(&url)
            .header("Idempotency-Key", key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let replayed = response.headers().get("idempotent-replayed").is_some();
        (status, replayed, response.text().await.unwrap())
    }

    /// The value of the counter `name` in the service's `/metrics`.
    async fn counter(address: std::net::SocketAddr, name: &str) -> u64 {
        let text = reqwest::get(format!("http://{address}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let line = text
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        line[name.len() + 1..].parse().unwrap()
    }

    const ADD: &str = r#"{"type": "ADD"}"#;

    /// A group whose apply panics is answered with an error (503, nothing
    /// written), and its committer's place is given back: after more
    /// panics than there are committers, the next request is applied. The
    /// timeout only turns the hang this guards against into a failure.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panic_in_a_group_answers_it_and_frees_its_committer() {
        let options = Options {
            committers: 1,
            ..Options::default()
        };
        let (service, address, stop, server) = counter_service(options).await;
        service.groups["counter"].panic_next(3);
        let sends = async {
            for i in 0..3 {
                let (status, _, body) = post(address, "p1", &format!("k{i}"), ADD).await;
                assert_eq!(status, 503, "{body}");
                assert!(body.contains("nothing was written"), "{body}");
            }
            post(address, "p1", "k3", ADD).await
        };
        let (status, replayed, body) =
            tokio::time::timeout(std::time::Duration::from_secs(60), sends)
                .await
                .expect("the machine's queue waits for a committer that panicked");
        assert_eq!((status, replayed), (200, false), "{body}");
        assert!(body.contains(r#""revision":1"#), "{body}");
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }

    /// Requests for three processes that arrive while every committer is
    /// busy are applied in one transaction: one group of three, each
    /// answered with its own response once it committed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_for_different_processes_share_one_commit() {
        let (service, address, stop, server) = counter_service(Options::default()).await;
        let held = service.hold_committers("counter");
        let sends: Vec<_> = (0..3)
            .map(|i| {
                tokio::spawn(
                    async move { post(address, &format!("p{i}"), &format!("k{i}"), ADD).await },
                )
            })
            .collect();
        service.queued("counter", 3).await;
        drop(held);
        for send in sends {
            let (status, replayed, body) = send.await.unwrap();
            assert_eq!((status, replayed), (200, false), "{body}");
            assert!(body.contains(r#""revision":1"#), "{body}");
        }
        assert_eq!(counter(address, "idemchart_event_groups_total").await, 1);
        assert_eq!(
            counter(address, "idemchart_event_group_members_total").await,
            3
        );
        for i in 0..3 {
            let state = crate::runtime::nonblocking::inspect(&service.store, &format!("p{i}"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(state["context"]["n"], 1);
        }
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }

    /// In one group, a duplicate is answered from its frozen response and
    /// a conflict with 422, and neither keeps the third member from being
    /// applied.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_member_refused_does_not_fail_the_others() {
        let (service, address, stop, server) = counter_service(Options::default()).await;
        let (status, _, first) = post(address, "p1", "k1", ADD).await;
        assert_eq!(status, 200);
        let (status, _, _) =
            post(address, "p2", "k2", r#"{"type": "ADD", "data": {"x": 1}}"#).await;
        assert_eq!(status, 200);
        let held = service.hold_committers("counter");
        let duplicate = tokio::spawn(async move { post(address, "p1", "k1", ADD).await });
        service.queued("counter", 1).await;
        let conflict = tokio::spawn(async move {
            post(address, "p2", "k2", r#"{"type": "ADD", "data": {"x": 2}}"#).await
        });
        service.queued("counter", 2).await;
        let fresh = tokio::spawn(async move { post(address, "p3", "k3", ADD).await });
        service.queued("counter", 3).await;
        drop(held);
        assert_eq!(duplicate.await.unwrap(), (200, true, first));
        let (status, _, body) = conflict.await.unwrap();
        assert_eq!(status, 422, "{body}");
        assert!(body.contains("id-reused"), "{body}");
        let (status, replayed, body) = fresh.await.unwrap();
        assert_eq!((status, replayed), (200, false), "{body}");
        assert_eq!(counter(address, "idemchart_event_groups_total").await, 3);
        assert_eq!(
            counter(address, "idemchart_event_group_members_total").await,
            5
        );
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }
}
