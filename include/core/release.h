/* release: an OpenShift release as the configuration spells it, "4.N"
 * (the MCS release the gate fronts, upstream.mcs_release). Here, below
 * conf, so the configuration reads it; what a release means for reading
 * Accept is http/accept.h's (the families) and verdict/mcs_release.h's. */
#ifndef SKEWGATE_RELEASE_H
#define SKEWGATE_RELEASE_H

/* The releases (4.N) the gate has read the code of: 4.13 to 4.23. */
#define MCS_RELEASE_OLDEST 13u
#define MCS_RELEASE_NEWEST 23u
/* Releases 4.N parse for MCS_RELEASE_OLDEST <= N <= MCS_RELEASE_MAX. */
#define MCS_RELEASE_MAX 999u

/* "4.22" into *minor: "4." and a decimal N without a leading zero,
 * MCS_RELEASE_OLDEST <= N <= MCS_RELEASE_MAX. 0 or -1. */
int mcs_release_parse(const char *s, unsigned *minor);

#endif
