use super::*;

const AT_REST: Moment = Moment {
    quiet: true,
    rested: true,
    idle: true,
    writes: true,
    reads_store: false,
};

#[test]
fn a_write_at_rest_commits_on_the_actor() {
    assert_eq!(route(AT_REST), Route::Here);
}

#[test]
fn a_write_under_load_goes_to_the_thread() {
    for busy in [
        Moment {
            quiet: false,
            ..AT_REST
        },
        Moment {
            rested: false,
            ..AT_REST
        },
        Moment {
            idle: false,
            ..AT_REST
        },
    ] {
        assert_eq!(route(busy), Route::Thread, "{busy:?}");
    }
}

#[test]
fn a_pure_read_behind_nothing_is_answered_now_whatever_the_load() {
    for quiet in [false, true] {
        for rested in [false, true] {
            let m = Moment {
                quiet,
                rested,
                writes: false,
                ..AT_REST
            };
            assert_eq!(route(m), Route::Now, "{m:?}");
        }
    }
}

#[test]
fn a_pure_read_behind_an_unanswered_job_waits_its_turn() {
    let m = Moment {
        idle: false,
        writes: false,
        ..AT_REST
    };
    assert_eq!(route(m), Route::Thread);
}

#[test]
fn history_reads_always_go_to_the_thread() {
    for writes in [false, true] {
        let m = Moment {
            writes,
            reads_store: true,
            ..AT_REST
        };
        assert_eq!(route(m), Route::Thread, "{m:?}");
    }
}
