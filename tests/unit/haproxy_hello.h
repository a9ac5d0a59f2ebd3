/*
 * haproxy_hello.h - the HAPROXY-HELLO frame HAProxy 2.6.12 sends to open
 * a data connection (captured: nbthread 2, tune.bufsize 16384), for the
 * tests that start a connection the way HAProxy does.
 */
#ifndef SPOA_TEST_HAPROXY_HELLO_H
#define SPOA_TEST_HAPROXY_HELLO_H

static const char haproxy_hello[] =
	"\x00\x00\x00\x81" "\x01" "\x00\x00\x00\x01" "\x00" "\x00"
	"\x12" "supported-versions" "\x08\x03" "2.0"
	"\x0e" "max-frame-size" "\x03\xfc\xf0\x06"
	"\x0c" "capabilities" "\x08\x10" "pipelining,async"
	"\x09" "engine-id" "\x08\x24" "0135bc6d-7614-4f55-96b4-72bbe48ed1f4";

#endif /* SPOA_TEST_HAPROXY_HELLO_H */
