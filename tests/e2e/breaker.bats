#!/usr/bin/env bats
# The breaker's judgement, through a real HAProxy: busy is not dead.

load helpers

setup() {
	# A short cool-down so the probe comes within the test; the threshold
	# stays the default, and the tests loop on the state, not on a count.
	AGENT_ARGS="--cooldown 1s"
	start_scene
}

teardown() {
	stop_all
}

@test "a worker answering 503 a hundred times stays closed" {
	local i
	for i in $(seq 100); do
		run verdict_of /status/503
		assert_output "closed backpressure 0 "
	done
	run verdict_of /status/429
	assert_output "closed backpressure 0 "
}

# 529, an LLM server's "overloaded" (NVIDIA Dynamo's), is a capacity status
# by default although it is a 5xx; the 500s after it open the same breaker.
@test "a worker answering 529 a hundred times stays closed; 500s then open it" {
	local i opened_at=0
	for i in $(seq 100); do
		run verdict_of /status/529
		assert_output "closed backpressure 0 "
	done
	# No retry-on can list 529: the client gets the worker's own answer.
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/status/529"
	assert_output 529
	[ "$(header_of /status/529 x-worker)" = w1 ]
	for i in $(seq 50); do
		run verdict_of /status/500
		if [[ "$output" == "open failure "* ]]; then
			opened_at=$i
			break
		fi
		assert_output "closed failure $i "
	done
	[ "$opened_at" -gt 1 ]
	assert_output "open failure $opened_at closed->open"
}

@test "a worker answering 500 opens its breaker at the threshold" {
	local i opened_at=0 previous=0
	for i in $(seq 50); do
		run verdict_of /status/500
		if [[ "$output" == "open failure "* ]]; then
			opened_at=$i
			break
		fi
		# Until it opens: closed, and the streak grows by one each time.
		assert_output "closed failure $((previous + 1)) "
		previous=$((previous + 1))
	done
	[ "$opened_at" -gt 1 ]
	assert_output "open failure $opened_at closed->open"
	grep -q "breaker workers/w1: closed -> open (failure, status 500" "$RUN_DIR/agent.log"
	# Late outcomes while open change nothing.
	run verdict_of /status/503
	assert_output "open backpressure $opened_at "
	run verdict_of /status/200
	assert_output "open success $opened_at "
}

@test "after the cool-down a probe answered 200 closes the breaker" {
	until [[ "$(verdict_of /status/500)" == open* ]]; do :; done
	# The timer moves it to half-open without any request.
	wait_until 5 grep -q "breaker workers/w1: open -> half_open (cool-down of 1000 ms elapsed)" "$RUN_DIR/agent.log"
	run verdict_of /status/200
	assert_output "closed success 0 half_open->closed"
	run verdict_of /status/200
	assert_output "closed success 0 "
}

@test "a half-open probe answered 503 recovers the breaker (policy close)" {
	until [[ "$(verdict_of /status/500)" == open* ]]; do :; done
	wait_until 5 grep -q "open -> half_open" "$RUN_DIR/agent.log"
	run verdict_of /status/503
	assert_output "closed backpressure 0 half_open->closed"
}

@test "a failed probe opens the breaker again" {
	until [[ "$(verdict_of /status/500)" == open* ]]; do :; done
	wait_until 5 grep -q "open -> half_open" "$RUN_DIR/agent.log"
	run verdict_of /status/502
	assert_output --regexp '^open failure [0-9]+ half_open->open$'
}

@test "busy answers between faults keep the streak: 2 faults, a 503, 1 fault trips at threshold 3" {
	stop_all
	AGENT_ARGS="--threshold 3"
	start_scene
	run verdict_of /status/500
	assert_output "closed failure 1 "
	run verdict_of /status/500
	assert_output "closed failure 2 "
	run verdict_of /status/503
	assert_output "closed backpressure 2 "
	run verdict_of /status/500
	assert_output "open failure 3 closed->open"
}

@test "a success resets the streak" {
	run verdict_of /status/500
	assert_output "closed failure 1 "
	run verdict_of /status/404
	assert_output "closed client_error 0 "
	run verdict_of /status/500
	assert_output "closed failure 1 "
}
