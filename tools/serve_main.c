/* serve_main.c — `plumb-serve`, the program behind `plumb serve` (main.c runs it from beside
 * itself). A program of its own so that libmicrohttpd and the TLS libraries it pulls in
 * (gnutls, nettle, p11-kit, ...) are loaded by the server alone: linked into `plumb`, they cost
 * every other command ~2.7 MiB of resident memory and their start-up. */
#include "cli.h"

int main(int argc, char **argv)
{
    cli_set_command("serve");
    return cli_finish(cmd_serve(argc, argv));
}
