/*
 * test_runtime_api_parse.c - Runtime API replies: what HAProxy 2.6, 3.0 and 3.2
 * really answer (captured from running instances and pinned here byte for
 * byte), what each parser makes of them, and that cut or garbage replies
 * are reported, never trusted, and never read past their end.
 *
 * Captured with this configuration (servers on ports nobody listens on,
 * `retries 2`, one request sent through fe), then `set maxconn server
 * be_app/w1 5`, `set server be_app/w2 state drain`, `set server be_app/w3
 * state maint`:
 *
 *   backend be_app
 *       server w1 127.0.0.1:18261 weight 100
 *       server w2 127.0.0.1:18262 weight 100 maxconn 10
 *       server w3 127.0.0.1:18263 weight 100
 *   backend be_chk
 *       server c1 127.0.0.1:18264 check inter 100ms fall 1 rise 2
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hapi/runtime_api.h"

/*
 * HAProxy 2.6.12, `show stat`: FRONTEND and BACKEND rows, w1 after one refused request (econ
 * 1, wretr 2) with `set maxconn` 5, w2 drained, w3 in maintenance, c1 DOWN by its check.
 */
static const char STAT_26[] =
	"# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,"
	"wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,"
	"throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,"
	"check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,"
	"req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,"
	"lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,"
	"agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,"
	"agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,"
	"intercepted,dcon,dses,wrew,connect,reuse,cache_lookups,cache_hits,srv_icur,src_ilim,"
	"qtime_max,ctime_max,rtime_max,ttime_max,eint,idle_conn_cur,safe_conn_cur,used_conn_cur,"
	"need_conn_est,uweight,agg_server_status,agg_server_check_status,agg_check_status,-,"
	"ssl_sess,ssl_reused_sess,ssl_failed_handshake,h2_headers_rcvd,h2_data_rcvd,"
	"h2_settings_rcvd,h2_rst_stream_rcvd,h2_goaway_rcvd,h2_detected_conn_protocol_errors,"
	"h2_detected_strm_protocol_errors,h2_rst_stream_resp,h2_goaway_resp,h2_open_connections,"
	"h2_backend_open_streams,h2_total_connections,h2_backend_total_streams,"
	"h1_open_connections,h1_open_streams,h1_total_connections,h1_total_streams,h1_bytes_in,"
	"h1_bytes_out,h1_spliced_bytes_in,h1_spliced_bytes_out,\n"
	"fe,FRONTEND,,,0,1,9985,1,82,217,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,0,0,1,,,,0,0,0,0,1,0,,"
	"0,1,1,,,0,0,0,0,,,,,,,,,,,,,,,,,,,,,http,,0,1,1,0,0,0,0,,,0,0,,,,,,,0,,,,,,,,,-,0,0,0,0,"
	"0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,1,79,214,0,0,\n"
	"be_app,w1,0,0,0,1,5,3,82,217,,0,,1,0,2,0,no check,100,1,0,,,7,,,1,3,1,,1,,2,0,,2,,,,0,0,"
	"0,0,0,0,,,,0,0,0,,,,,5,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18261,,http,,,,,,,,0,3,0,,,0,,0,0,"
	"0,0,0,0,0,0,1,100,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,w2,0,0,0,0,10,0,0,0,,0,,0,0,0,0,DRAIN,100,1,0,,,5,,,1,3,2,,0,,2,0,,0,,,,0,0,0,0,"
	"0,0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18262,,http,,,,,,,,0,0,0,,,0,,0,0,0,"
	"0,0,0,0,0,0,100,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,w3,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,100,1,0,,,5,,,1,3,3,,0,,2,0,,0,,,,0,0,0,0,0,"
	"0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18263,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,"
	"0,0,0,0,0,100,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,BACKEND,0,0,0,1,999,1,82,217,0,0,,1,0,2,0,UP,100,1,0,,0,7,0,,1,3,0,,1,,1,0,,1,,,,"
	"0,0,0,0,1,0,,,,1,0,0,0,0,0,0,6,,,0,0,0,0,,,,,,,,,,,,,,http,roundrobin,,,,,,,0,3,0,0,0,,,"
	"0,0,0,0,0,,,,,100,0,0,0,-,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,3,3,0,0,0,0,\n"
	"be_chk,c1,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN,1,1,0,1,1,7,7,,1,4,1,,0,,2,0,,0,L4CON,,0,0,0,"
	"0,0,0,0,,,,0,0,0,,,,,-1,Connection refused,,0,0,0,0,,,,Layer4 connection problem,,2,1,0,"
	",,,127.0.0.1:18264,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,1,1,,,,-,0,0,0,,,,,,,,,,,,,,,"
	",,,,,,,\n"
	"be_chk,BACKEND,0,0,0,0,1,0,0,0,0,0,,0,0,0,0,DOWN,0,0,0,,1,7,7,,1,4,0,,0,,1,0,,0,,,,0,0,"
	"0,0,0,0,,,,0,0,0,0,0,0,0,-1,,,0,0,0,0,,,,,,,,,,,,,,http,roundrobin,,,,,,,0,0,0,0,0,,,0,"
	"0,0,0,0,,,,,0,0,0,0,-,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n"
	"\n";

/* HAProxy 3.0.11, `show stat -1 4 -1` (servers only), same state. */
static const char STAT_SERVERS_30[] =
	"# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,"
	"wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,"
	"throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,"
	"check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,"
	"req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,"
	"lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,"
	"agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,"
	"agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,"
	"intercepted,dcon,dses,wrew,connect,reuse,cache_lookups,cache_hits,srv_icur,src_ilim,"
	"qtime_max,ctime_max,rtime_max,ttime_max,eint,idle_conn_cur,safe_conn_cur,used_conn_cur,"
	"need_conn_est,uweight,agg_server_status,agg_server_check_status,agg_check_status,srid,"
	"sess_other,h1sess,h2sess,h3sess,req_other,h1req,h2req,h3req,proto,-,ssl_sess,"
	"ssl_reused_sess,ssl_failed_handshake,h3_data,h3_headers,h3_cancel_push,h3_push_promise,"
	"h3_max_push_id,h3_goaway,h3_settings,h3_no_error,h3_general_protocol_error,"
	"h3_internal_error,h3_stream_creation_error,h3_closed_critical_stream,"
	"h3_frame_unexpected,h3_frame_error,h3_excessive_load,h3_id_error,h3_settings_error,"
	"h3_missing_settings,h3_request_rejected,h3_request_cancelled,h3_request_incomplete,"
	"h3_message_error,h3_connect_error,h3_version_fallback,pack_decompression_failed,"
	"qpack_encoder_stream_error,qpack_decoder_stream_error,quic_rxbuf_full,quic_dropped_pkt,"
	"quic_dropped_pkt_bufoverrun,quic_dropped_parsing_pkt,quic_socket_full,quic_sendto_err,"
	"quic_sendto_err_unknwn,quic_sent_pkt,quic_lost_pkt,quic_too_short_dgram,quic_retry_sent,"
	"quic_retry_validated,quic_retry_error,quic_half_open_conn,quic_hdshk_fail,"
	"quic_stless_rst_sent,quic_conn_migration_done,quic_transp_err_no_error,"
	"quic_transp_err_internal_error,quic_transp_err_connection_refused,"
	"quic_transp_err_flow_control_error,quic_transp_err_stream_limit_error,"
	"quic_transp_err_stream_state_error,quic_transp_err_final_size_error,"
	"quic_transp_err_frame_encoding_error,quic_transp_err_transport_parameter_error,"
	"quic_transp_err_connection_id_limit,quic_transp_err_protocol_violation_error,"
	"quic_transp_err_invalid_token,quic_transp_err_application_error,"
	"quic_transp_err_crypto_buffer_exceeded,quic_transp_err_key_update_error,"
	"quic_transp_err_aead_limit_reached,quic_transp_err_no_viable_path,"
	"quic_transp_err_crypto_error,quic_transp_err_unknown_error,quic_data_blocked,"
	"quic_stream_data_blocked,quic_streams_blocked_bidi,quic_streams_blocked_uni,"
	"h2_headers_rcvd,h2_data_rcvd,h2_settings_rcvd,h2_rst_stream_rcvd,h2_goaway_rcvd,"
	"h2_detected_conn_protocol_errors,h2_detected_strm_protocol_errors,h2_rst_stream_resp,"
	"h2_goaway_resp,h2_open_connections,h2_backend_open_streams,h2_total_connections,"
	"h2_backend_total_streams,h1_open_connections,h1_open_streams,h1_total_connections,"
	"h1_total_streams,h1_bytes_in,h1_bytes_out,h1_spliced_bytes_in,h1_spliced_bytes_out,\n"
	"be_app,w1,0,0,0,1,5,3,82,217,,0,,1,0,2,0,no check,100,1,0,,,7,,,1,3,1,,1,,2,0,,2,,,,0,0,"
	"0,0,0,0,,,,0,0,0,,,,,4,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18301,,http,,,,,,,,0,3,0,,,0,,0,0,"
	"0,0,0,0,0,0,1,100,,,,0,,,,,,,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,w2,0,0,0,0,10,0,0,0,,0,,0,0,0,0,DRAIN,100,1,0,,,7,,,1,3,2,,0,,2,0,,0,,,,0,0,0,0,"
	"0,0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18302,,http,,,,,,,,0,0,0,,,0,,0,0,0,"
	"0,0,0,0,0,0,100,,,,0,,,,,,,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,w3,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,100,1,0,,,4,,,1,3,3,,0,,2,0,,0,,,,0,0,0,0,0,"
	"0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18303,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,"
	"0,0,0,0,0,100,,,,0,,,,,,,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_chk,c1,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN,1,1,0,1,1,7,7,,1,4,1,,0,,2,0,,0,L4CON,,0,0,0,"
	"0,0,0,0,,,,0,0,0,,,,,-1,Connection refused,,0,0,0,0,,,,Layer4 connection problem,,2,1,0,"
	",,,127.0.0.1:18304,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,1,1,,,,0,,,,,,,,,,-,0,0,0,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"\n";

/* HAProxy 3.2.26, `show stat -1 4 -1`, same state: 79 more columns than 2.6. */
static const char STAT_SERVERS_32[] =
	"# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,"
	"wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,"
	"throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,"
	"check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,"
	"req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,"
	"lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,"
	"agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,"
	"agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,"
	"intercepted,dcon,dses,wrew,connect,reuse,cache_lookups,cache_hits,srv_icur,src_ilim,"
	"qtime_max,ctime_max,rtime_max,ttime_max,eint,idle_conn_cur,safe_conn_cur,used_conn_cur,"
	"need_conn_est,uweight,agg_server_status,agg_server_check_status,agg_check_status,srid,"
	"sess_other,h1sess,h2sess,h3sess,req_other,h1req,h2req,h3req,proto,-,ssl_sess,"
	"ssl_reused_sess,ssl_failed_handshake,ssl_ocsp_staple,ssl_failed_ocsp_staple,h3_data,"
	"h3_headers,h3_cancel_push,h3_push_promise,h3_max_push_id,h3_goaway,h3_settings,"
	"h3_no_error,h3_general_protocol_error,h3_internal_error,h3_stream_creation_error,"
	"h3_closed_critical_stream,h3_frame_unexpected,h3_frame_error,h3_excessive_load,"
	"h3_id_error,h3_settings_error,h3_missing_settings,h3_request_rejected,"
	"h3_request_cancelled,h3_request_incomplete,h3_message_error,h3_connect_error,"
	"h3_version_fallback,pack_decompression_failed,qpack_encoder_stream_error,"
	"qpack_decoder_stream_error,quic_rxbuf_full,quic_dropped_pkt,quic_dropped_pkt_bufoverrun,"
	"quic_dropped_parsing_pkt,quic_socket_full,quic_sendto_err,quic_sendto_err_unknwn,"
	"quic_sent_pkt,quic_lost_pkt,quic_too_short_dgram,quic_retry_sent,quic_retry_validated,"
	"quic_retry_error,quic_half_open_conn,quic_hdshk_fail,quic_stless_rst_sent,"
	"quic_conn_migration_done,quic_transp_err_no_error,quic_transp_err_internal_error,"
	"quic_transp_err_connection_refused,quic_transp_err_flow_control_error,"
	"quic_transp_err_stream_limit_error,quic_transp_err_stream_state_error,"
	"quic_transp_err_final_size_error,quic_transp_err_frame_encoding_error,"
	"quic_transp_err_transport_parameter_error,quic_transp_err_connection_id_limit,"
	"quic_transp_err_protocol_violation_error,quic_transp_err_invalid_token,"
	"quic_transp_err_application_error,quic_transp_err_crypto_buffer_exceeded,"
	"quic_transp_err_key_update_error,quic_transp_err_aead_limit_reached,"
	"quic_transp_err_no_viable_path,quic_transp_err_crypto_error,"
	"quic_transp_err_unknown_error,quic_data_blocked,quic_stream_data_blocked,"
	"quic_streams_blocked_bidi,quic_streams_blocked_uni,h2_headers_rcvd,h2_data_rcvd,"
	"h2_settings_rcvd,h2_rst_stream_rcvd,h2_goaway_rcvd,h2_detected_conn_protocol_errors,"
	"h2_detected_strm_protocol_errors,h2_rst_stream_resp,h2_goaway_resp,h2_open_connections,"
	"h2_backend_open_streams,h2_total_connections,h2_backend_total_streams,"
	"h1_open_connections,h1_open_streams,h1_total_connections,h1_total_streams,h1_bytes_in,"
	"h1_bytes_out,h1_spliced_bytes_in,h1_spliced_bytes_out,\n"
	"be_app,w1,0,0,0,1,5,3,82,217,,0,,1,0,2,0,no check,100,1,0,,,7,,,1,3,1,,1,,2,0,,2,,,,0,0,"
	"0,0,0,0,,,,0,0,0,,,,,3,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18321,,http,,,,,,,,0,3,0,,,0,,0,0,"
	"0,0,0,0,0,0,1,100,,,,0,,,,,,,,,,-,0,0,0,0,0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,w2,0,0,0,0,10,0,0,0,,0,,0,0,0,0,DRAIN,100,1,0,,,7,,,1,3,2,,0,,2,0,,0,,,,0,0,0,0,"
	"0,0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18322,,http,,,,,,,,0,0,0,,,0,,0,0,0,"
	"0,0,0,0,0,0,100,,,,0,,,,,,,,,,-,0,0,0,0,0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_app,w3,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,100,1,0,,,3,,,1,3,3,,0,,2,0,,0,,,,0,0,0,0,0,"
	"0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:18323,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,"
	"0,0,0,0,0,100,,,,0,,,,,,,,,,-,0,0,0,0,0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n"
	"be_chk,c1,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN,1,1,0,1,1,7,7,,1,4,1,,0,,2,0,,0,L4CON,,0,0,0,"
	"0,0,0,0,,,,0,0,0,,,,,-1,Connection refused,,0,0,0,0,,,,Layer4 connection problem,,2,1,0,"
	",,,127.0.0.1:18324,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,1,1,,,,0,,,,,,,,,,-,0,0,0,0,"
	"0,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
	",,\n"
	"\n";

/* HAProxy 2.6.12, `show servers state`, same state. */
static const char SERVERS_STATE_26[] =
	"1\n"
	"# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
	"srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
	"srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
	"srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr "
	"srv_agent_port\n"
	"3 be_app 1 w1 127.0.0.1 2 0 100 100 7 1 0 2 0 0 0 0 - 18261 - 0 0 - - 0\n"
	"3 be_app 2 w2 127.0.0.1 2 8 100 100 5 1 0 2 0 0 0 0 - 18262 - 0 0 - - 0\n"
	"3 be_app 3 w3 127.0.0.1 0 1 100 100 5 1 0 0 0 0 0 0 - 18263 - 0 0 - - 0\n"
	"4 be_chk 1 c1 127.0.0.1 0 0 1 1 7 8 2 0 6 0 0 0 - 18264 - 0 0 - - 0\n"
	"\n";

/* HAProxy 3.2.26, `show servers state be_app`. */
static const char SERVERS_STATE_BE_32[] =
	"1\n"
	"# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
	"srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
	"srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
	"srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr "
	"srv_agent_port\n"
	"3 be_app 1 w1 127.0.0.1 2 0 100 100 7 1 0 2 0 0 0 0 - 18321 - 0 0 - - 0\n"
	"3 be_app 2 w2 127.0.0.1 2 8 100 100 7 1 0 2 0 0 0 0 - 18322 - 0 0 - - 0\n"
	"3 be_app 3 w3 127.0.0.1 0 1 100 100 3 1 0 0 0 0 0 0 - 18323 - 0 0 - - 0\n"
	"\n";

/* HAProxy 2.6.12, `show info`. */
static const char INFO_26[] =
	"Name: HAProxy\n"
	"Version: 2.6.12-1+deb12u4\n"
	"Release_date: 2026/10/17\n"
	"Nbthread: 2\n"
	"Nbproc: 1\n"
	"Process_num: 1\n"
	"Pid: 22600\n"
	"Uptime: 0d 0h00m07s\n"
	"Uptime_sec: 7\n"
	"Memmax_MB: 0\n"
	"PoolAlloc_MB: 0\n"
	"PoolUsed_MB: 0\n"
	"PoolFailed: 0\n"
	"Ulimit-n: 19999\n"
	"Maxsock: 19999\n"
	"Maxconn: 9985\n"
	"Hard_maxconn: 9985\n"
	"CurrConns: 0\n"
	"CumConns: 78\n"
	"CumReq: 7\n"
	"MaxSslConns: 0\n"
	"CurrSslConns: 0\n"
	"CumSslConns: 0\n"
	"Maxpipes: 0\n"
	"PipesUsed: 0\n"
	"PipesFree: 0\n"
	"ConnRate: 0\n"
	"ConnRateLimit: 0\n"
	"MaxConnRate: 1\n"
	"SessRate: 0\n"
	"SessRateLimit: 0\n"
	"MaxSessRate: 1\n"
	"SslRate: 0\n"
	"SslRateLimit: 0\n"
	"MaxSslRate: 0\n"
	"SslFrontendKeyRate: 0\n"
	"SslFrontendMaxKeyRate: 0\n"
	"SslFrontendSessionReuse_pct: 0\n"
	"SslBackendKeyRate: 0\n"
	"SslBackendMaxKeyRate: 0\n"
	"SslCacheLookups: 0\n"
	"SslCacheMisses: 0\n"
	"CompressBpsIn: 0\n"
	"CompressBpsOut: 0\n"
	"CompressBpsRateLim: 0\n"
	"Tasks: 15\n"
	"Run_queue: 0\n"
	"Idle_pct: 100\n"
	"node: vm\n"
	"Stopping: 0\n"
	"Jobs: 3\n"
	"Unstoppable Jobs: 0\n"
	"Listeners: 2\n"
	"ActivePeers: 0\n"
	"ConnectedPeers: 0\n"
	"DroppedLogs: 0\n"
	"BusyPolling: 0\n"
	"FailedResolutions: 0\n"
	"TotalBytesOut: 6705\n"
	"TotalSplicdedBytesOut: 0\n"
	"BytesOutRate: 6464\n"
	"DebugCommandsIssued: 0\n"
	"CumRecvLogs: 0\n"
	"Build info: 2.6.12-1+deb12u4\n"
	"Memmax_bytes: 0\n"
	"PoolAlloc_bytes: 141312\n"
	"PoolUsed_bytes: 141312\n"
	"Start_time_sec: 1796006569\n"
	"Tainted: 0\n"
	"\n";

/* HAProxy 3.2.26, `show info`: more keys than 2.6. */
static const char INFO_32[] =
	"Name: HAProxy\n"
	"Version: 3.2.26-1\n"
	"Release_date: 2026/10/14\n"
	"Nbthread: 2\n"
	"Nbproc: 1\n"
	"Process_num: 1\n"
	"Pid: 22604\n"
	"Uptime: 0d 0h00m07s\n"
	"Uptime_sec: 7\n"
	"Memmax_MB: 0\n"
	"PoolAlloc_MB: 0\n"
	"PoolUsed_MB: 0\n"
	"PoolFailed: 0\n"
	"Ulimit-n: 19999\n"
	"Maxsock: 19999\n"
	"Maxconn: 9985\n"
	"Hard_maxconn: 9985\n"
	"CurrConns: 0\n"
	"CumConns: 78\n"
	"CumReq: 7\n"
	"MaxSslConns: 0\n"
	"CurrSslConns: 0\n"
	"CumSslConns: 0\n"
	"Maxpipes: 0\n"
	"PipesUsed: 0\n"
	"PipesFree: 0\n"
	"ConnRate: 0\n"
	"ConnRateLimit: 0\n"
	"MaxConnRate: 1\n"
	"SessRate: 0\n"
	"SessRateLimit: 0\n"
	"MaxSessRate: 1\n"
	"SslRate: 0\n"
	"SslRateLimit: 0\n"
	"MaxSslRate: 0\n"
	"SslFrontendKeyRate: 0\n"
	"SslFrontendMaxKeyRate: 0\n"
	"SslFrontendSessionReuse_pct: 0\n"
	"SslBackendKeyRate: 0\n"
	"SslBackendMaxKeyRate: 0\n"
	"SslCacheLookups: 0\n"
	"SslCacheMisses: 0\n"
	"CompressBpsIn: 0\n"
	"CompressBpsOut: 0\n"
	"CompressBpsRateLim: 0\n"
	"Tasks: 17\n"
	"Run_queue: 0\n"
	"Idle_pct: 100\n"
	"node: vm\n"
	"Stopping: 0\n"
	"Jobs: 4\n"
	"Unstoppable Jobs: 0\n"
	"Listeners: 2\n"
	"ActivePeers: 0\n"
	"ConnectedPeers: 0\n"
	"DroppedLogs: 0\n"
	"BusyPolling: 0\n"
	"FailedResolutions: 0\n"
	"TotalBytesOut: 11021\n"
	"TotalSplicedBytesOut: 0\n"
	"BytesOutRate: 10784\n"
	"DebugCommandsIssued: 0\n"
	"CumRecvLogs: 0\n"
	"Build info: 3.2.26-1\n"
	"Memmax_bytes: 0\n"
	"PoolAlloc_bytes: 324024\n"
	"PoolUsed_bytes: 324024\n"
	"Start_time_sec: 1796006569\n"
	"Tainted: 0\n"
	"TotalWarnings: 3\n"
	"MaxconnReached: 0\n"
	"BootTime_ms: 29\n"
	"Niced_tasks: 0\n"
	"CurrStreams: 1\n"
	"CumStreams: 7\n"
	"BlockedTrafficWarnings: 0\n"
	"\n";

/*
 * HAProxy 2.6.12 (3.0 and 3.2 alike): `set server be_app/w1 state ready; set server
 * be_app/nosuch state drain; set maxconn server be_app/w1 0; show servers state be_app`.
 */
static const char MULTI_26[] =
	"\n"
	"No such server.\n"
	"\n"
	"\n"
	"1\n"
	"# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
	"srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
	"srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
	"srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr "
	"srv_agent_port\n"
	"3 be_app 1 w1 127.0.0.1 2 0 100 100 7 1 0 2 0 0 0 0 - 18261 - 0 0 - - 0\n"
	"3 be_app 2 w2 127.0.0.1 2 8 100 100 5 1 0 2 0 0 0 0 - 18262 - 0 0 - - 0\n"
	"3 be_app 3 w3 127.0.0.1 0 1 100 100 5 1 0 0 0 0 0 0 - 18263 - 0 0 - - 0\n"
	"\n";

/*
 * HAProxy 2.6.12: `set maxconn server be_app/w1 abc; set server be_app/w1 state ready; set
 * server be_app/nosuch state drain`: the first error lacks its empty line, so three commands
 * yield two outputs.
 */
static const char MISALIGNED_26[] =
	"maxconn string empty or preceded by garbage\n"
	"\n"
	"No such server.\n"
	"\n";

/* HAProxy 3.2.26, the same line: fixed, three outputs. */
static const char MISALIGNED_32[] =
	"maxconn string empty or preceded by garbage\n"
	"\n"
	"\n"
	"No such server.\n"
	"\n";

/*
 * HAProxy 3.2.26, a line of 600 commands (19199 bytes > tune.bufsize): one unterminated
 * message instead of 600 outputs (2.6 and 3.0 ran all 600).
 */
static const char TOOBIG_32[] =
	"The command line is too big for the buffer size. Please change tune.bufsize in the "
	"configuration to use a bigger command.\n";

/* --- helpers --- */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A copy of a reply in a buffer of exactly its length, so that AddressSanitizer
 * catches any read past the end. */
static char *exact_copy(const char *text, size_t len)
{
	char *p = malloc(len ? len : 1);
	assert_non_null(p);
	memcpy(p, text, len);
	return p;
}

static bool slice_is(struct runtime_api_str s, const char *text)
{
	return s.len == strlen(text) && memcmp(s.ptr, text, s.len) == 0;
}

/* --- show stat --- */

struct stat_expect {
	const char *pxname, *svname, *status;
	int64_t slim;
	uint64_t econ, eresp, wretr, wredis, srv_abrt, cli_abrt, hrsp_5xx, weight, iid, sid;
};

#define MAX_ROWS 16
struct stat_seen {
	unsigned n;
	struct runtime_api_stat_row rows[MAX_ROWS];
};

static void collect_stat(void *ctx, const struct runtime_api_stat_row *row)
{
	struct stat_seen *seen = ctx;
	assert_true(seen->n < MAX_ROWS);
	seen->rows[seen->n++] = *row;
}

/* The same four servers, whichever version answered: w1 after one refused
 * request (1 connection error, 2 retries) and `set maxconn` 5, w2 drained
 * with its configured maxconn 10, w3 in maintenance, c1 down by its check. */
static const struct stat_expect captured_servers[] = {
	{"be_app", "w1", "no check", 5, 1, 0, 2, 0, 0, 0, 0, 100, 3, 1},
	{"be_app", "w2", "DRAIN", 10, 0, 0, 0, 0, 0, 0, 0, 100, 3, 2},
	{"be_app", "w3", "MAINT", -1, 0, 0, 0, 0, 0, 0, 0, 100, 3, 3},
	{"be_chk", "c1", "DOWN", -1, 0, 0, 0, 0, 0, 0, 0, 1, 4, 1},
};

static void check_stat_rows(const struct stat_seen *seen, const struct stat_expect *want,
			    unsigned n, const char *what)
{
	if (seen->n != n)
		fail_msg("%s: %u rows, expected %u", what, seen->n, n);
	for (unsigned i = 0; i < n; i++) {
		const struct runtime_api_stat_row *r = &seen->rows[i];
		const struct stat_expect *w = &want[i];
		if (!slice_is(r->pxname, w->pxname) || !slice_is(r->svname, w->svname) ||
		    !slice_is(r->status, w->status))
			fail_msg("%s row %u: %.*s/%.*s '%.*s', expected %s/%s '%s'", what, i,
				 (int)r->pxname.len, r->pxname.ptr, (int)r->svname.len,
				 r->svname.ptr, (int)r->status.len, r->status.ptr, w->pxname,
				 w->svname, w->status);
		assert_int_equal(r->slim, w->slim);
		assert_int_equal(r->econ, w->econ);
		assert_int_equal(r->eresp, w->eresp);
		assert_int_equal(r->wretr, w->wretr);
		assert_int_equal(r->wredis, w->wredis);
		assert_int_equal(r->srv_abrt, w->srv_abrt);
		assert_int_equal(r->cli_abrt, w->cli_abrt);
		assert_int_equal(r->hrsp_5xx, w->hrsp_5xx);
		assert_int_equal(r->weight, w->weight);
		assert_int_equal(r->iid, w->iid);
		assert_int_equal(r->sid, w->sid);
	}
}

static const struct {
	const char *name;
	const char *reply;
} captured_stats[] = {
	{"2.6 show stat", STAT_26},
	{"3.0 show stat -1 4 -1", STAT_SERVERS_30},
	{"3.2 show stat -1 4 -1", STAT_SERVERS_32},
};

/* Each capture, as read from the socket (with the empty line that ends
 * it) and as the splitter hands it over (without). */
static void test_stat_captured(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(captured_stats); i++) {
		size_t full = strlen(captured_stats[i].reply);
		for (size_t len = full; len >= full - 1; len--) {
			struct stat_seen seen = {0};
			struct runtime_api_parse_report rep;
			char *buf = exact_copy(captured_stats[i].reply, len);
			if (!runtime_api_parse_stat(buf, len, collect_stat, &seen, &rep))
				fail_msg("%s: refused: %s", captured_stats[i].name, rep.error);
			assert_int_equal(rep.malformed, 0);
			assert_string_equal(rep.error, "");
			assert_int_equal(rep.rows, seen.n);
			check_stat_rows(&seen, captured_servers, ARRAY_SIZE(captured_servers),
					captured_stats[i].name);
			free(buf);
		}
	}
}

/* Without a `type` column, FRONTEND and BACKEND rows are told by name; a
 * quoted field may hold commas and doubled quotes; columns in any order. */
static void test_stat_synthetic(void **state)
{
	static const char reply[] =
		"# svname,pxname,check_desc,status,slim,econ,eresp,wretr,wredis,srv_abrt,cli_abrt,"
		"hrsp_5xx,weight,iid,sid,\n"
		"FRONTEND,fe,,OPEN,100,,,,,,,,,2,0,\n"
		"s1,be,\"refused, \"\"twice\"\"\",UP 1/2,,7,8,9,10,11,12,13,14,5,6,\n"
		"BACKEND,be,,UP,,7,8,9,10,11,12,13,14,5,0,\n"
		"\n";
	static const struct stat_expect want[] = {
		{"be", "s1", "UP 1/2", -1, 7, 8, 9, 10, 11, 12, 13, 14, 5, 6},
	};
	struct stat_seen seen = {0};
	struct runtime_api_parse_report rep;

	assert_true(runtime_api_parse_stat(reply, strlen(reply), collect_stat, &seen, &rep));
	assert_int_equal(rep.malformed, 0);
	check_stat_rows(&seen, want, 1, "synthetic");
}

/* (reply) -> (accepted?, rows, malformed, words of the first error). */
static const struct {
	const char *reply;
	bool accepted;
	unsigned rows, malformed;
	const char *error_has;
} bad_stats[] = {
	{"", false, 0, 0, "empty reply"},
	{"\n", false, 0, 0, "no '# pxname"},
	{"Unknown command. Please enter one of the following commands only:\n", false, 0, 0,
	 "reply starts with 'Unknown command."},
	{"# pxname,svname,status\n", false, 0, 0, "no 'slim' column"},
	{"# pxname,svname,status,slim,econ,eresp,wretr,wredis,srv_abrt,cli_abrt,hrsp_5xx,weight,"
	 "iid\n", false, 0, 0, "no 'sid' column"},
	{"# pxname,svname,status,slim,econ,eresp,wretr,wredis,srv_abrt,cli_abrt,hrsp_5xx,weight,"
	 "iid,sid,", false, 0, 0, "header cut short"},
	/* A quote that never closes in the header: the field is empty (it was
	 * left unset, and read; found by fuzz_runtime_api). */
	{"# pxname,\"svname\n", false, 0, 0, "no 'svname' column"},
	{"# \"_\xff\xff\xff\n%", false, 0, 0, "no 'pxname' column"},
};

#define STAT_HEADER                                                                                \
	"# pxname,svname,status,slim,econ,eresp,wretr,wredis,srv_abrt,cli_abrt,hrsp_5xx,weight,"   \
	"iid,sid,type,\n"

static const struct {
	const char *rows;
	unsigned good, malformed;
	const char *error_has;
} bad_stat_rows[] = {
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,2,\n", 1, 0, ""},
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,2\n", 0, 1, "line 2: 15 fields, the header has 16"},
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,2,,\n", 0, 1, "17 fields"},
	{"b,s,UP,,x,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "line 2 (s): bad econ"},
	{"b,s,UP,,-1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad econ"},
	{"b,s,UP,, 1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad econ"},
	{"b,s,UP,,99999999999999999999,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad econ"},
	{"b,s,UP,,18446744073709551615,2,3,4,5,6,7,8,9,10,2,\n", 1, 0, ""},
	{"b,s,UP,9223372036854775808,1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad slim"},
	{"b,s,UP,\"5\",1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad slim"},
	{"b,s,UP,,\"1\",2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad econ"},
	{",s,UP,,1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad pxname"},
	{"b,,UP,,1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "bad svname"},
	{"b,s,\"UP\"x,,1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "text after a closing quote"},
	{"b,s,\"UP,,1,2,3,4,5,6,7,8,9,10,2,\n", 0, 1, "cut short"},
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,2,", 0, 1, "line 2: cut short"},
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,2,\nb,t,UP,,1,2,3,4,5,6,7,8,9,10,2,\nb,u,UP,,1,2,3,4,5,6,7,8,9,1",
	 2, 1, "line 4: cut short"},
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,1,\n", 0, 0, ""}, /* a BACKEND row, by type */
	{"b,s,UP,,1,2,3,4,5,6,7,8,9,10,3,\n", 0, 0, ""}, /* a listener */
	{"# another comment\n\n\nb,s,UP,,1,2,3,4,5,6,7,8,9,10,2,\n", 1, 0, ""},
	{"\x01\x02\xff,\0,\n", 0, 1, "3 fields"},
};

static void test_stat_bad(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_stats); i++) {
		struct stat_seen seen = {0};
		struct runtime_api_parse_report rep;
		size_t len = strlen(bad_stats[i].reply);
		char *buf = exact_copy(bad_stats[i].reply, len);
		bool ok = runtime_api_parse_stat(buf, len, collect_stat, &seen, &rep);
		if (ok != bad_stats[i].accepted || !strstr(rep.error, bad_stats[i].error_has))
			fail_msg("'%s': %s, error '%s', expected '%s'", bad_stats[i].reply,
				 ok ? "accepted" : "refused", rep.error, bad_stats[i].error_has);
		assert_int_equal(seen.n, 0);
		free(buf);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad_stat_rows); i++) {
		struct stat_seen seen = {0};
		struct runtime_api_parse_report rep;
		char text[512];
		/* Rows may hold a NUL: the length comes from the table's literal. */
		size_t rows_len = strlen(bad_stat_rows[i].rows);
		if (bad_stat_rows[i].rows[0] == '\x01')
			rows_len = 7; /* "\x01\x02\xff,\0,\n" */
		size_t len = strlen(STAT_HEADER) + rows_len;
		memcpy(text, STAT_HEADER, strlen(STAT_HEADER));
		memcpy(text + strlen(STAT_HEADER), bad_stat_rows[i].rows, rows_len);
		char *buf = exact_copy(text, len);
		assert_true(runtime_api_parse_stat(buf, len, collect_stat, &seen, &rep));
		if (seen.n != bad_stat_rows[i].good || rep.malformed != bad_stat_rows[i].malformed ||
		    !strstr(rep.error, bad_stat_rows[i].error_has))
			fail_msg("rows '%s': %u good, %u malformed, error '%s'; expected %u, %u, '%s'",
				 bad_stat_rows[i].rows, seen.n, rep.malformed, rep.error,
				 bad_stat_rows[i].good, bad_stat_rows[i].malformed,
				 bad_stat_rows[i].error_has);
		assert_int_equal(rep.rows, seen.n);
		free(buf);
	}
}

/* Cut anywhere, a reply yields a prefix of its rows and never a row from a
 * line that did not end: "12" is not "1234". */
static void test_stat_cut_everywhere(void **state)
{
	for (size_t f = 0; f < ARRAY_SIZE(captured_stats); f++) {
		const char *reply = captured_stats[f].reply;
		size_t full = strlen(reply);
		for (size_t len = 0; len <= full; len++) {
			struct stat_seen seen = {0};
			struct runtime_api_parse_report rep;
			char *buf = exact_copy(reply, len);
			bool ok = runtime_api_parse_stat(buf, len, collect_stat, &seen, &rep);
			if (ok) {
				/* Rows are reported only for complete lines. */
				check_stat_rows(&seen, captured_servers, seen.n, captured_stats[f].name);
				assert_true(rep.malformed <= 1);
			} else {
				assert_int_equal(seen.n, 0);
			}
			free(buf);
		}
	}
}

/* Random bytes, and random bytes after a real header: no crash, no read
 * past the end (under ASan), every callback a well-formed row. */
static void test_stat_garbage(void **state)
{
	uint32_t seed = 12345;
	const char alphabet[] = "ab,,,\"\"\n\n0123456789 #-";

	for (int round = 0; round < 2000; round++) {
		char text[600];
		size_t len = 0;
		if (round % 2) {
			memcpy(text, STAT_HEADER, strlen(STAT_HEADER));
			len = strlen(STAT_HEADER);
		}
		size_t extra = (seed = seed * 1103515245 + 12345) % 200;
		for (size_t i = 0; i < extra; i++) {
			seed = seed * 1103515245 + 12345;
			text[len++] = round % 3 ? alphabet[(seed >> 16) % (sizeof(alphabet) - 1)]
						: (char)(seed >> 16);
		}
		struct stat_seen seen = {0};
		struct runtime_api_parse_report rep;
		char *buf = exact_copy(text, len);
		(void)runtime_api_parse_stat(buf, len, collect_stat, &seen, &rep);
		for (unsigned i = 0; i < seen.n; i++) {
			assert_true(seen.rows[i].pxname.len > 0);
			assert_true(seen.rows[i].svname.len > 0);
			assert_true(seen.rows[i].pxname.ptr >= buf &&
				    seen.rows[i].pxname.ptr + seen.rows[i].pxname.len <= buf + len);
		}
		free(buf);
	}
}

/* --- fed as it arrives --- */

/* What a parse made of a reply, as text: every row's fields (read during
 * the callback - a streamed row's slices do not outlive it) and the report. */
struct digest {
	char text[16384];
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void digest_add(struct digest *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(d->text + d->len, sizeof(d->text) - d->len, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(d->text) - d->len);
	d->len += (size_t)n;
}

static void digest_stat_row(void *ctx, const struct runtime_api_stat_row *r)
{
	digest_add(ctx, "%.*s/%.*s '%.*s' %.*s %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 "\n",
		   (int)r->pxname.len, r->pxname.ptr, (int)r->svname.len, r->svname.ptr,
		   (int)r->status.len, r->status.ptr, (int)r->mode.len, r->mode.ptr, r->slim,
		   r->econ, r->eresp, r->wretr, r->wredis, r->srv_abrt, r->cli_abrt, r->hrsp_5xx,
		   r->weight, r->iid, r->sid);
}

static void digest_state_row(void *ctx, const struct runtime_api_server_state *r)
{
	digest_add(ctx, "%" PRIu64 " %.*s %" PRIu64 " %.*s %u %u %u %u\n", r->be_id,
		   (int)r->be_name.len, r->be_name.ptr, r->srv_id, (int)r->srv_name.len,
		   r->srv_name.ptr, r->op_state, r->admin_state, r->uweight, r->iweight);
}

static void digest_report(struct digest *d, bool usable, const struct runtime_api_parse_report *r)
{
	digest_add(d, "usable %d rows %u malformed %u error '%s'\n", usable, r->rows, r->malformed,
		   r->error);
}

/*
 * Feeds reply `chunk` bytes at a time as the client does: each feed sees
 * what the last one left unused followed by the new bytes, in a buffer of
 * exactly that size (ASan sees a read past it), and the last is at_end.
 */
static void stream_reply(const char *reply, size_t len, size_t chunk, bool servers_state,
			 struct digest *d)
{
	struct runtime_api_stat_stream st;
	struct runtime_api_servers_state_stream ss;
	char *pending = NULL;
	size_t pending_len = 0, pos = 0;

	runtime_api_stat_stream_init(&st, digest_stat_row, d);
	runtime_api_servers_state_stream_init(&ss, digest_state_row, d);
	for (;;) {
		size_t n = len - pos < chunk ? len - pos : chunk;
		bool at_end = pos + n == len;
		char *buf = malloc(pending_len + n ? pending_len + n : 1);
		assert_non_null(buf);
		if (pending_len)
			memcpy(buf, pending, pending_len);
		if (n)
			memcpy(buf + pending_len, reply + pos, n);
		size_t have = pending_len + n;
		pos += n;
		size_t used = servers_state ? runtime_api_servers_state_stream_feed(&ss, buf, have, at_end)
					    : runtime_api_stat_stream_feed(&st, buf, have, at_end);
		assert_true(used <= have);
		if (at_end)
			assert_int_equal(used, have);
		free(pending);
		pending_len = have - used;
		pending = malloc(pending_len ? pending_len : 1);
		assert_non_null(pending);
		memcpy(pending, buf + used, pending_len);
		free(buf);
		if (at_end)
			break;
	}
	free(pending);
	if (servers_state)
		digest_report(d, runtime_api_servers_state_stream_usable(&ss), &ss.report);
	else
		digest_report(d, runtime_api_stat_stream_usable(&st), &st.report);
}

static void whole_reply(const char *reply, size_t len, bool servers_state, struct digest *d)
{
	struct runtime_api_parse_report rep;
	char *buf = exact_copy(reply, len);
	bool ok = servers_state ? runtime_api_parse_servers_state(buf, len, digest_state_row, d, &rep)
				: runtime_api_parse_stat(buf, len, digest_stat_row, d, &rep);
	digest_report(d, ok, &rep);
	free(buf);
}

/* Any way a reply is cut into arrivals, the rows and the report are those
 * of the whole reply. */
static void check_any_split(const char *reply, size_t len, bool servers_state)
{
	static const size_t chunks[] = {1, 2, 3, 7, 64, 100000};
	static struct digest whole, fed;

	whole.len = 0;
	whole_reply(reply, len, servers_state, &whole);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		fed.len = 0;
		stream_reply(reply, len, chunks[i], servers_state, &fed);
		if (fed.len != whole.len || memcmp(fed.text, whole.text, whole.len) != 0)
			fail_msg("fed %zu bytes at a time:\n%.*s\nwhole:\n%.*s", chunks[i],
				 (int)fed.len, fed.text, (int)whole.len, whole.text);
	}
}

static void test_stat_stream_any_split(void **state)
{
	char text[2048];

	for (size_t i = 0; i < ARRAY_SIZE(captured_stats); i++)
		check_any_split(captured_stats[i].reply, strlen(captured_stats[i].reply), false);
	for (size_t i = 0; i < ARRAY_SIZE(bad_stats); i++)
		check_any_split(bad_stats[i].reply, strlen(bad_stats[i].reply), false);
	for (size_t i = 0; i < ARRAY_SIZE(bad_stat_rows); i++) {
		size_t rows_len = bad_stat_rows[i].rows[0] == '\x01' ? 7 : strlen(bad_stat_rows[i].rows);
		size_t len = strlen(STAT_HEADER) + rows_len;
		memcpy(text, STAT_HEADER, strlen(STAT_HEADER));
		memcpy(text + strlen(STAT_HEADER), bad_stat_rows[i].rows, rows_len);
		check_any_split(text, len, false);
	}
	/* Garbage after a real header, and garbage alone. */
	uint32_t seed = 777;
	const char alphabet[] = "ab,,,\"\"\n\n0123456789 #-";
	for (int round = 0; round < 300; round++) {
		size_t len = 0;
		if (round % 2) {
			memcpy(text, STAT_HEADER, strlen(STAT_HEADER));
			len = strlen(STAT_HEADER);
		}
		size_t extra = (seed = seed * 1103515245 + 12345) % 300;
		for (size_t k = 0; k < extra; k++) {
			seed = seed * 1103515245 + 12345;
			text[len++] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		check_any_split(text, len, false);
	}
}

/* An error message is refused once its first line (or 40 bytes of it, all
 * a log line shows) is there, without waiting for the rest; a header is
 * waited for until its line ends. */
static void test_stat_stream_early(void **state)
{
	static const char error[] = "Unknown command. Please enter one of the following commands";
	struct runtime_api_stat_stream s;
	struct stat_seen seen = {0};

	runtime_api_stat_stream_init(&s, collect_stat, &seen);
	assert_int_equal(runtime_api_stat_stream_feed(&s, "# pxname,svn", 12, false), 0);
	assert_false(runtime_api_stat_stream_usable(&s));
	assert_string_equal(s.report.error, "");

	runtime_api_stat_stream_init(&s, collect_stat, &seen);
	assert_int_equal(runtime_api_stat_stream_feed(&s, error, 39, false), 0);
	assert_string_equal(s.report.error, "");
	assert_int_equal(runtime_api_stat_stream_feed(&s, error, 40, false), 40);
	assert_false(runtime_api_stat_stream_usable(&s));
	assert_non_null(strstr(s.report.error, "reply starts with 'Unknown command."));
	/* Whatever follows is taken and ignored. */
	assert_int_equal(runtime_api_stat_stream_feed(&s, "# pxname\n", 9, true), 9);
	assert_int_equal(seen.n, 0);
}

/* --- show servers state --- */

struct state_expect {
	uint64_t be_id;
	const char *be_name;
	uint64_t srv_id;
	const char *srv_name;
	unsigned op, admin, uweight, iweight;
};

struct state_seen {
	unsigned n;
	struct runtime_api_server_state rows[MAX_ROWS];
};

static void collect_state(void *ctx, const struct runtime_api_server_state *row)
{
	struct state_seen *seen = ctx;
	assert_true(seen->n < MAX_ROWS);
	seen->rows[seen->n++] = *row;
}

/* w2 drained (FDRAIN 0x08), w3 in maintenance (FMAINT 0x01, so stopped),
 * c1 stopped by its check but not by an admin. */
static const struct state_expect captured_states[] = {
	{3, "be_app", 1, "w1", RUNTIME_API_SRV_RUNNING, 0, 100, 100},
	{3, "be_app", 2, "w2", RUNTIME_API_SRV_RUNNING, RUNTIME_API_ADMF_FDRAIN, 100, 100},
	{3, "be_app", 3, "w3", RUNTIME_API_SRV_STOPPED, RUNTIME_API_ADMF_FMAINT, 100, 100},
	{4, "be_chk", 1, "c1", RUNTIME_API_SRV_STOPPED, 0, 1, 1},
};

static void check_state_rows(const struct state_seen *seen, const struct state_expect *want,
			     unsigned n, const char *what)
{
	if (seen->n != n)
		fail_msg("%s: %u rows, expected %u", what, seen->n, n);
	for (unsigned i = 0; i < n; i++) {
		const struct runtime_api_server_state *r = &seen->rows[i];
		if (!slice_is(r->be_name, want[i].be_name) || !slice_is(r->srv_name, want[i].srv_name))
			fail_msg("%s row %u: %.*s/%.*s, expected %s/%s", what, i,
				 (int)r->be_name.len, r->be_name.ptr, (int)r->srv_name.len,
				 r->srv_name.ptr, want[i].be_name, want[i].srv_name);
		assert_int_equal(r->be_id, want[i].be_id);
		assert_int_equal(r->srv_id, want[i].srv_id);
		assert_int_equal(r->op_state, want[i].op);
		assert_int_equal(r->admin_state, want[i].admin);
		assert_int_equal(r->uweight, want[i].uweight);
		assert_int_equal(r->iweight, want[i].iweight);
	}
}

static void test_servers_state_captured(void **state)
{
	const struct {
		const char *name, *reply;
		unsigned rows;
	} cases[] = {
		{"2.6 show servers state", SERVERS_STATE_26, 4},
		{"3.2 show servers state be_app", SERVERS_STATE_BE_32, 3},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t full = strlen(cases[i].reply);
		for (size_t len = full; len >= full - 1; len--) {
			struct state_seen seen = {0};
			struct runtime_api_parse_report rep;
			char *buf = exact_copy(cases[i].reply, len);
			if (!runtime_api_parse_servers_state(buf, len, collect_state, &seen, &rep))
				fail_msg("%s: refused: %s", cases[i].name, rep.error);
			assert_int_equal(rep.malformed, 0);
			check_state_rows(&seen, captured_states, cases[i].rows, cases[i].name);
			/* Where each server points: what a slot's move changes. */
			for (unsigned k = 0; k < seen.n; k++) {
				assert_true(slice_is(seen.rows[k].addr, "127.0.0.1"));
				assert_int_equal(seen.rows[k].port.len, 5);
			}
			assert_true(slice_is(seen.rows[0].port, i == 0 ? "18261" : "18321"));
			free(buf);
		}
	}
	/* The masks HAProxy itself uses. */
	assert_true(captured_states[1].admin & RUNTIME_API_ADMF_DRAIN);
	assert_false(captured_states[1].admin & RUNTIME_API_ADMF_MAINT);
	assert_true(captured_states[2].admin & RUNTIME_API_ADMF_MAINT);
}

#define STATE_HEADER                                                                               \
	"1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "    \
	"srv_iweight\n"

static const struct {
	const char *reply;
	bool accepted;
	unsigned rows, malformed;
	const char *error_has;
} bad_states[] = {
	{"", false, 0, 0, "empty reply"},
	{"Can't find backend.\n\n", false, 0, 0, "expected format version 1, got 'Can't find"},
	{"2\n# be_id be_name\n", false, 0, 0, "got '2'"},
	{"1", false, 0, 0, "got '1'"}, /* cut: "1" may be "12" */
	{"1\n", false, 0, 0, "no '# be_id be_name ...' header"},
	{"1\n3 be 1 s 127.0.0.1 2 0 1 1\n", false, 0, 0, "header"},
	{"1\n# be_id be_name srv_id srv_name srv_op_state srv_uweight srv_iweight\n", false, 0, 0,
	 "no 'srv_admin_state' column"},
	{"1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state", false, 0, 0,
	 "header"},
	{STATE_HEADER, true, 0, 0, ""},
	{STATE_HEADER "3 be 1 s 127.0.0.1 2 8 1 1\n\n", true, 1, 0, ""},
	{STATE_HEADER "3 be 1 s  2 8 1 1\n", true, 1, 0, ""}, /* no address: an empty field */
	{STATE_HEADER "3 be 1 s 2 8 1 1\n", true, 0, 1, "line 3: 8 fields, the header has 9"},
	{STATE_HEADER "3  be 1 s 127.0.0.1 2 8 1 1\n", true, 0, 1, "10 fields"},
	{STATE_HEADER "3 be 1 s 127.0.0.1 2 x 1 1\n", true, 0, 1, "bad srv_admin_state"},
	{STATE_HEADER "3 be 1 s 127.0.0.1 2 4294967296 1 1\n", true, 0, 1, "bad srv_admin_state"},
	{STATE_HEADER "x be 1 s 127.0.0.1 2 8 1 1\n", true, 0, 1, "bad be_id"},
	{STATE_HEADER "3 be 1 s 127.0.0.1 2 8 1 1\n3 be 2 t 127.0.0.1 2 8 1", true, 1, 1,
	 "line 4: cut short"},
	{STATE_HEADER "# a comment\n3 be 1 s 127.0.0.1 2 8 1 1\n", true, 1, 0, ""},
};

static void test_servers_state_bad(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_states); i++) {
		struct state_seen seen = {0};
		struct runtime_api_parse_report rep;
		size_t len = strlen(bad_states[i].reply);
		char *buf = exact_copy(bad_states[i].reply, len);
		bool ok = runtime_api_parse_servers_state(buf, len, collect_state, &seen, &rep);
		if (ok != bad_states[i].accepted || seen.n != bad_states[i].rows ||
		    rep.malformed != bad_states[i].malformed ||
		    !strstr(rep.error, bad_states[i].error_has))
			fail_msg("'%s': %s, %u rows, %u malformed, error '%s'", bad_states[i].reply,
				 ok ? "accepted" : "refused", seen.n, rep.malformed, rep.error);
		free(buf);
	}
}

static void test_servers_state_cut_everywhere(void **state)
{
	size_t full = strlen(SERVERS_STATE_26);
	for (size_t len = 0; len <= full; len++) {
		struct state_seen seen = {0};
		struct runtime_api_parse_report rep;
		char *buf = exact_copy(SERVERS_STATE_26, len);
		if (runtime_api_parse_servers_state(buf, len, collect_state, &seen, &rep))
			check_state_rows(&seen, captured_states, seen.n, "cut");
		else
			assert_int_equal(seen.n, 0);
		free(buf);
	}
}

/* --- show info --- */

static void test_servers_state_stream_any_split(void **state)
{
	check_any_split(SERVERS_STATE_26, strlen(SERVERS_STATE_26), true);
	for (size_t i = 0; i < ARRAY_SIZE(bad_states); i++)
		check_any_split(bad_states[i].reply, strlen(bad_states[i].reply), true);
}

static void test_info_captured(void **state)
{
	const struct {
		const char *reply;
		struct runtime_api_info want;
	} cases[] = {
		{INFO_26, {22600, 7, 1, 1796006569, "2.6.12-1+deb12u4"}},
		{INFO_32, {22604, 7, 1, 1796006569, "3.2.26-1"}},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct runtime_api_info info;
		struct runtime_api_parse_report rep;
		size_t len = strlen(cases[i].reply);
		char *buf = exact_copy(cases[i].reply, len);
		if (!runtime_api_parse_info(buf, len, &info, &rep))
			fail_msg("%s: refused: %s", cases[i].want.version, rep.error);
		assert_int_equal(rep.malformed, 0);
		assert_int_equal(info.pid, cases[i].want.pid);
		assert_int_equal(info.uptime_sec, cases[i].want.uptime_sec);
		assert_int_equal(info.process_num, cases[i].want.process_num);
		assert_int_equal(info.start_time_sec, cases[i].want.start_time_sec);
		assert_string_equal(info.version, cases[i].want.version);
		free(buf);
	}
}

static const struct {
	const char *reply;
	bool accepted;
	unsigned malformed;
	const char *error_has;
} bad_infos[] = {
	{"", false, 0, "no Pid"},
	{"Unknown command.\n\n", false, 1, "no Pid"},
	{"Pid: 12\n", false, 0, "no Uptime_sec"},
	{"Uptime_sec: 3\nPid: 12", false, 1, "no Pid"}, /* cut short: "12" may be "123" */
	{"Pid: abc\nUptime_sec: 3\n", false, 1, "no Pid"},
	{"Pid: \nUptime_sec: 3\n", false, 1, "no Pid"},
	{"Pid:12\nUptime_sec: 3\n", false, 1, "no Pid"},
	{"Uptime_sec: 3\nPid: 12\nx", true, 1, "line 3: cut short"},
	{"Pid: 12\nUptime_sec: 3\nnot a pair\n", true, 1, "line 3: not 'Key: value'"},
	{"Pid: 12\nUptime_sec: 3\n", true, 0, ""},
	{"Pid: 12\nUptime_sec: 3\nProcess_num: x\n", true, 1, "Process_num is not a number"},
	{"Pid: 12\nPid: 13\nUptime_sec: 3\n", true, 0, ""}, /* the first one counts */
};

static void test_info_bad(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_infos); i++) {
		struct runtime_api_info info;
		struct runtime_api_parse_report rep;
		size_t len = strlen(bad_infos[i].reply);
		char *buf = exact_copy(bad_infos[i].reply, len);
		bool ok = runtime_api_parse_info(buf, len, &info, &rep);
		if (ok != bad_infos[i].accepted || rep.malformed != bad_infos[i].malformed ||
		    !strstr(rep.error, bad_infos[i].error_has))
			fail_msg("'%s': %s, %u malformed, error '%s'", bad_infos[i].reply,
				 ok ? "accepted" : "refused", rep.malformed, rep.error);
		if (ok)
			assert_int_equal(info.pid, 12);
		free(buf);
	}

	/* A version longer than the struct holds is cut, still terminated. */
	char text[200];
	struct runtime_api_info info;
	snprintf(text, sizeof(text), "Pid: 1\nUptime_sec: 2\nVersion: %0100d\n", 7);
	assert_true(runtime_api_parse_info(text, strlen(text), &info, NULL));
	assert_int_equal(strlen(info.version), sizeof(info.version) - 1);
}

/* --- multi-command replies --- */

static void test_split_captured(void **state)
{
	struct runtime_api_str out[4];
	size_t found;
	size_t len = strlen(MULTI_26);
	char *buf = exact_copy(MULTI_26, len);

	assert_true(runtime_api_split_reply(buf, len, out, 4, &found));
	assert_int_equal(found, 4);
	assert_int_equal(out[0].len, 0);                      /* set server ... state ready */
	assert_true(slice_is(out[1], "No such server.\n")); /* set server be_app/nosuch */
	assert_int_equal(out[2].len, 0);                      /* set maxconn server */
	assert_true(out[3].len > 0);                          /* show servers state be_app */

	struct state_seen seen = {0};
	struct runtime_api_parse_report rep;
	assert_true(runtime_api_parse_servers_state(out[3].ptr, out[3].len, collect_state, &seen, &rep));
	assert_int_equal(rep.malformed, 0);
	check_state_rows(&seen, captured_states, 3, "fourth output");
	free(buf);
}

/* (reply, commands) -> (split?, outputs found, the outputs). */
static const struct {
	const char *name;
	const char *reply;
	size_t n;
	bool ok;
	size_t found;
	const char *outputs[3];
} splits[] = {
	{"one set", "\n", 1, true, 1, {""}},
	{"three sets", "\n\n\n", 3, true, 3, {"", "", ""}},
	{"error then set", "No such backend.\n\n\n", 2, true, 2, {"No such backend.\n", ""}},
	{"nothing for nothing", "", 0, true, 0, {NULL}},
	{"nothing for one", "", 1, false, 0, {NULL}},
	{"cut before the empty line", "No such server.\n", 1, false, 0, {NULL}},
	{"cut inside a line", "No such ser", 1, false, 0, {NULL}},
	{"one output more", "\n\n", 1, false, 1, {""}},
	{"bytes after the last", "\nx", 1, false, 1, {""}},
	{"fewer than sent", "\n", 2, false, 1, {""}},
	{"2.6 error without its empty line", MISALIGNED_26, 3, false, 2,
	 {"maxconn string empty or preceded by garbage\n", "No such server.\n"}},
	{"3.2: same line, fixed", MISALIGNED_32, 3, true, 3,
	 {"maxconn string empty or preceded by garbage\n", "", "No such server.\n"}},
	{"3.2: line over tune.bufsize", TOOBIG_32, 3, false, 0, {NULL}},
};

static void test_split(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(splits); i++) {
		struct runtime_api_str out[3];
		size_t found = 99;
		size_t len = strlen(splits[i].reply);
		char *buf = exact_copy(splits[i].reply, len);
		bool ok = runtime_api_split_reply(buf, len, out, splits[i].n, &found);
		if (ok != splits[i].ok || found != splits[i].found)
			fail_msg("%s: %s with %zu outputs, expected %s with %zu", splits[i].name,
				 ok ? "split" : "not split", found, splits[i].ok ? "split" : "not split",
				 splits[i].found);
		for (size_t k = 0; k < found; k++)
			if (!slice_is(out[k], splits[i].outputs[k]))
				fail_msg("%s: output %zu is '%.*s', expected '%s'", splits[i].name, k,
					 (int)out[k].len, out[k].ptr, splits[i].outputs[k]);
		free(buf);
	}
}

/* A whole `show stat` reply is one output: CSV has no empty line inside. */
static void test_split_stat(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(captured_stats); i++) {
		struct runtime_api_str out;
		size_t found;
		const char *reply = captured_stats[i].reply;
		assert_true(runtime_api_split_reply(reply, strlen(reply), &out, 1, &found));
		assert_int_equal(out.len, strlen(reply) - 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_captured),
		cmocka_unit_test(test_stat_synthetic),
		cmocka_unit_test(test_stat_bad),
		cmocka_unit_test(test_stat_cut_everywhere),
		cmocka_unit_test(test_stat_garbage),
		cmocka_unit_test(test_stat_stream_any_split),
		cmocka_unit_test(test_stat_stream_early),
		cmocka_unit_test(test_servers_state_captured),
		cmocka_unit_test(test_servers_state_bad),
		cmocka_unit_test(test_servers_state_cut_everywhere),
		cmocka_unit_test(test_servers_state_stream_any_split),
		cmocka_unit_test(test_info_captured),
		cmocka_unit_test(test_info_bad),
		cmocka_unit_test(test_split_captured),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_stat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
