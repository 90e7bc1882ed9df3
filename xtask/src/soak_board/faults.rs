//! The cycles: in each, the board runs for a random moment, a teammate may be
//! killed (and started again), one of the teammates' commands may be killed,
//! a teammate may be frozen past its lease; then boardd is killed with
//! SIGKILL and started again on the same state and socket.

use super::marker::Marker;
use super::mates::{Start, Teammate};
use crate::bench::harness::summary::Summary;
use crate::soak::rng::Rng;
use serde::Serialize;
use std::time::{Duration, Instant};
use teamboard_process::Boardd;

/// How long a restarted boardd may take to answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How often progress is printed.
const PROGRESS: Duration = Duration::from_secs(5);

pub struct Setting {
    pub cycles: u64,
    /// The lease: a frozen teammate stays frozen past it.
    pub lease: Duration,
}

/// What the cycles did.
#[derive(Debug, Default, Serialize)]
pub struct Done {
    pub boardd_kills: u64,
    /// From the kill to the first answer of the new boardd.
    pub restart: Summary,
    pub teammate_kills: u64,
    pub command_kills: u64,
    pub freezes: u64,
    pub seconds: f64,
}

/// Whether the drivers are still going; a driver that stopped early ends
/// the cycles (its error is the run's).
pub trait Watch {
    fn all_running(&self) -> bool;
    fn acks(&self) -> u64;
}

pub async fn run(
    s: &Setting,
    rng: &mut Rng,
    boardd: &mut Boardd,
    mates: &mut [Teammate],
    start: &Start<'_>,
    marker: &Marker,
    watch: &impl Watch,
) -> anyhow::Result<Done> {
    let mut done = Done::default();
    let mut restarts = Vec::new();
    let t0 = Instant::now();
    let mut shown = Instant::now();
    for k in 1..=s.cycles {
        if !watch.all_running() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(50..350))).await;
        for m in mates.iter_mut() {
            if m.stopped_until.is_some_and(|t| Instant::now() >= t) {
                m.thaw();
            }
            m.revive_if_dead(start, boardd)?;
        }
        if !mates.is_empty() {
            let m = &mut mates[rng.usize(..mates.len())];
            let free = m.stopped_until.is_none();
            match rng.u32(0..100) {
                0..12 if free => {
                    m.kill_and_restart(start, boardd).await?;
                    done.teammate_kills += 1;
                }
                12..15 if free && mates.iter().all(|m| m.stopped_until.is_none()) => {
                    let m = &mut mates[rng.usize(..mates.len())];
                    m.freeze(Instant::now() + s.lease + Duration::from_secs(1));
                    done.freezes += 1;
                }
                _ => {}
            }
        }
        if rng.u32(0..100) < 40 && kill_a_command(rng, marker) {
            done.command_kills += 1;
        }
        let t = Instant::now();
        boardd.restart(START_TIMEOUT).await?;
        restarts.push(t.elapsed());
        done.boardd_kills += 1;
        if shown.elapsed() >= PROGRESS || k == s.cycles {
            shown = Instant::now();
            println!(
                "cycle {k}/{}: {:.0} s, {} acks logged, {} teammate kills, {} command kills, {} freezes",
                s.cycles,
                t0.elapsed().as_secs_f64(),
                watch.acks(),
                done.teammate_kills,
                done.command_kills,
                done.freezes
            );
        }
    }
    for m in mates.iter_mut() {
        m.thaw();
    }
    done.restart = Summary::of(restarts);
    done.seconds = t0.elapsed().as_secs_f64();
    Ok(done)
}

/// `kill -9` of one of the teammates' `sleep`s, if one runs now.
fn kill_a_command(rng: &mut Rng, marker: &Marker) -> bool {
    let sleeps: Vec<u32> = marker
        .processes()
        .into_iter()
        .filter(|p| p.comm == "sleep")
        .map(|p| p.pid)
        .collect();
    if sleeps.is_empty() {
        return false;
    }
    marker.kill9(sleeps[rng.usize(..sleeps.len())])
}
