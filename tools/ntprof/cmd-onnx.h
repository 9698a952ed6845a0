/* The ONNX subcommands of the CLI: ntprof export (markup or ONNX -> ONNX)
 * and ntprof convert (ONNX or markup -> markup). */
#ifndef NTPROF_CMD_ONNX_H
#define NTPROF_CMD_ONNX_H

int cmd_export(int argc, char **argv);
int cmd_convert(int argc, char **argv);

#endif
