#include "ntp-version.h"
#include "ntprof/ntprof.h"

const char *ntp_version(void)
{
    return NTP_VERSION_STRING;
}
const char *ntp_git_revision(void)
{
    return NTP_GIT_REVISION;
}
