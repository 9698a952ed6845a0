/* Status names and descriptions, generated from NTP_STATUS_MAP. */
#include "ntprof/status.h"

static const char *const status_names[] = {
#define NTP_STATUS_NAME_(name, str) #name,
    NTP_STATUS_MAP(NTP_STATUS_NAME_)
#undef NTP_STATUS_NAME_
};

static const char *const status_strs[] = {
#define NTP_STATUS_STR_(name, str) str,
    NTP_STATUS_MAP(NTP_STATUS_STR_)
#undef NTP_STATUS_STR_
};

_Static_assert(sizeof status_names / sizeof status_names[0] == NTP_STATUS_COUNT,
               "status name table out of step with the enum");

const char *ntp_status_name(ntp_status s)
{
    return (unsigned)s < NTP_STATUS_COUNT ? status_names[s] : "UNKNOWN_STATUS";
}

const char *ntp_status_str(ntp_status s)
{
    return (unsigned)s < NTP_STATUS_COUNT ? status_strs[s] : "unknown status";
}
