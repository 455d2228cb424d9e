//! The journal of accepted jobs (docs/operations.md, "Durability"), against the real
//! binary (SIGTERM, kill -9, restart on the same journal directory) and an in-process
//! daemon (damaged entries, the byte bound). CPU backend, 2 KiB WindowPoSt.

mod daemon_support;

use std::time::Duration;

use daemon_support::spawned::*;
use daemon_support::*;
use filprove::server::config::ByteSize;
use filprove::server::convert::{input_digest, to_wire};
use filprove::server::journal::{Journal, UNREADABLE_DIR};
use filprove::server::pb;
use filprove_filecoin::ProofKind;
use tonic::Code;

/// SIGTERM with no grace: unfinished jobs are cancelled by the shutdown, their callers
/// told so, and their entries stay; the restarted daemon proves them under their ids.
/// Jobs that completed before the signal left the journal and are not proved again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_keeps_unfinished_jobs_and_the_restart_proves_them() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 0);
    let (mut d, c) = Spawned::start(dir.path(), 1).await;
    let jobs = submit_awaited(&c, "term", 6).await;
    d.signal("TERM");
    let status = tokio::task::block_in_place(|| d.wait_exit(Duration::from_secs(60)));
    assert!(status.success(), "{status}\n{}", d.log_text());
    let (proved, cancelled) = outcomes(jobs).await;
    assert!(!cancelled.is_empty(), "every job finished before SIGTERM");
    assert_eq!(journaled_ids(&d.journal), cancelled, "{}", d.log_text());

    let (mut d2, c2) = Spawned::start(dir.path(), 2).await;
    for id in &cancelled {
        expect_proved(&c2, id).await;
    }
    assert!(journaled_ids(&d2.journal).is_empty(), "entries removed");
    for id in &proved {
        let e = c2
            .clone()
            .await_proof(pb::AwaitProofRequest {
                job_id: id.clone(),
                timeout_ms: 1,
            })
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            Code::NotFound,
            "{id} was proved before: not again"
        );
    }
    d2.signal("TERM");
    let status = tokio::task::block_in_place(|| d2.wait_exit(Duration::from_secs(60)));
    assert!(status.success());
}

/// kill -9 while a job is being proved: no entry of a job whose proof was not delivered is
/// lost; the restarted daemon (over the stale socket) proves them under their ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_proving_then_restart_loses_no_accepted_job() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 60);
    let (mut d, mut c) = Spawned::start(dir.path(), 1).await;
    let jobs = submit_awaited(&c, "kill", 4).await;
    until_in_progress(&mut c).await;
    d.signal("KILL");
    let status = tokio::task::block_in_place(|| d.wait_exit(Duration::from_secs(30)));
    assert!(!status.success());
    let (_delivered, undelivered) = outcomes(jobs).await;
    let kept = journaled_ids(&d.journal);
    assert!(!kept.is_empty(), "kill -9 came after every job ended");
    // An entry leaves the journal only once its job has ended with a proof (which may
    // still have been on its way to the caller at the kill).
    for id in &kept {
        assert!(
            undelivered.contains(id),
            "{id}: delivered but still journaled"
        );
    }

    let (mut d2, c2) = Spawned::start(dir.path(), 2).await;
    for id in &kept {
        expect_proved(&c2, id).await;
    }
    assert!(journaled_ids(&d2.journal).is_empty());
    d2.signal("TERM");
    tokio::task::block_in_place(|| d2.wait_exit(Duration::from_secs(60)));
}

/// Damaged entries (a flipped byte in the body, a file that is no entry at all) are
/// reported as FAILED jobs under their ids with the reason, and set aside; the daemon
/// resumes the good entry next to them and serves on. A new submission under a
/// reported id proves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_entries_are_reported_under_their_ids_not_a_crash() {
    let window = request(ProofKind::WindowPoSt);
    let journal_dir = tempfile::tempdir().unwrap();
    {
        let j = Journal::open(journal_dir.path(), 1 << 30).unwrap();
        for id in ["good", "damaged"] {
            let wire = to_wire(&window, id, pb::Priority::Normal);
            let e = j.record(&wire, input_digest(&wire)).unwrap();
            if id == "damaged" {
                let mut data = std::fs::read(e.path()).unwrap();
                let at = data.len() - 10;
                data[at] ^= 0x40;
                std::fs::write(e.path(), data).unwrap();
            }
        }
        std::fs::write(journal_dir.path().join("0000-stray.job"), b"\x00\xffjunk").unwrap();
    }
    let jd = journal_dir.path().to_path_buf();
    let d = TestDaemon::start(move |c| c.journal.dir = jd.display().to_string());
    let c = filprove::client::connect(&d.unix_addr()).await.unwrap();
    expect_proved(&c, "good").await;
    for (id, why) in [
        ("damaged", "checksum"),
        ("journal:0000-stray.job", "header"),
    ] {
        let r = c
            .clone()
            .await_proof(pb::AwaitProofRequest {
                job_id: id.into(),
                timeout_ms: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, pb::await_proof_response::Status::Failed as i32);
        assert!(
            r.error_message.starts_with("journal_unreadable:") && r.error_message.contains(why),
            "{id}: {}",
            r.error_message
        );
        assert!(r.proof.is_empty());
    }
    let aside = std::fs::read_dir(journal_dir.path().join(UNREADABLE_DIR))
        .unwrap()
        .count();
    assert_eq!(aside, 2, "both kept for the operator");
    assert!(journaled_ids(journal_dir.path()).is_empty());
    // The id of a reported entry takes a new submission.
    let r = c
        .clone()
        .prove(pb::ProveRequest {
            submit: Some(to_wire(&window, "damaged", pb::Priority::Normal)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(
        r.status,
        pb::await_proof_response::Status::Completed as i32,
        "{}",
        r.error_message
    );
    d.shutdown().unwrap();
}

/// When the journal cannot hold another entry, a submission is refused with
/// RESOURCE_EXHAUSTED (journal_full, with the retry hint), never accepted unjournaled;
/// every accepted one is proved and leaves the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_journal_refuses_with_resource_exhausted() {
    let window = request(ProofKind::WindowPoSt);
    let one = prost::Message::encoded_len(&to_wire(&window, "burst-0", pb::Priority::Normal));
    assert!(one > 1024, "{one} bytes: two would fit the bound below");
    let d = TestDaemon::start(|c| {
        // Room for one entry (the request and a header of less than 300 bytes), not two.
        c.server.max_message_bytes = (one + 256).max(1024);
        c.journal.max_bytes = ByteSize::Bytes((one + 300).max(1024) as u64);
        c.intake.max_queued_bytes = ByteSize::Bytes(64 << 20);
        c.intake.max_inflight_bytes = ByteSize::Bytes(64 << 20);
    });
    let c = filprove::client::connect(&d.unix_addr()).await.unwrap();
    let burst: Vec<_> = (0..4)
        .map(|i| {
            let mut c = c.clone();
            let wire = to_wire(&window, &format!("burst-{i}"), pb::Priority::Normal);
            tokio::spawn(async move { c.submit_proof(wire).await })
        })
        .collect();
    let mut accepted = Vec::new();
    let mut refused = 0;
    for t in burst {
        match t.await.unwrap() {
            Ok(s) => accepted.push(s.into_inner().job_id),
            Err(e) => {
                assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
                assert!(e.message().starts_with("journal_full:"), "{}", e.message());
                assert!(e.message().contains("retry after"), "{}", e.message());
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "the journal held every entry");
    assert!(!accepted.is_empty());
    for id in &accepted {
        expect_proved(&c, id).await;
    }
    assert!(journaled_ids(&d.dir.path().join("journal")).is_empty());
    d.shutdown().unwrap();
}
