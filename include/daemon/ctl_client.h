/*
 * ctl_client.h - `spoa-breaker ctl`: a thin client of the control socket
 * (daemon/control.h). It sends its words as one line and prints the
 * agent's answer.
 */
#ifndef SPOA_CTL_CLIENT_H
#define SPOA_CTL_CLIENT_H

/* Exit statuses, for runbooks and package scripts. */
#define CTL_EXIT_DONE 0
#define CTL_EXIT_REFUSED 1     /* the agent answered "error: ..." */
#define CTL_EXIT_USAGE 2
#define CTL_EXIT_UNREACHABLE 3 /* no agent on the socket, or no answer in time */

/* argv[0] is "ctl". */
int ctl_main(int argc, char **argv);

#endif /* SPOA_CTL_CLIENT_H */
