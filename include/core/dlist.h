/* dlist: an intrusive doubly linked list, for sets that members join and
 * leave often, in O(1) (the exchanges a worker keeps bytes for, those
 * holding a slot for a full store). A member embeds a dlist_link_t (zeroed:
 * in no list); a list is a pointer to its first link. */
#ifndef SKEWGATE_DLIST_H
#define SKEWGATE_DLIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct dlist_link {
    struct dlist_link *prev, *next;
    bool on;                        /* in the list now */
} dlist_link_t;

/* The member that embeds link l at byte link_off (offsetof its field). */
static inline void *dlist_owner(dlist_link_t *l, size_t link_off)
{
    return (char *)l - link_off;
}

/* Joins the list at its front (a no-op when in it already). */
static inline void dlist_push(dlist_link_t **head, dlist_link_t *l)
{
    if (l->on)
        return;
    l->on = true;
    l->prev = NULL;
    l->next = *head;
    if (*head)
        (*head)->prev = l;
    *head = l;
}

/* Leaves the list (a no-op when not in it). */
static inline void dlist_remove(dlist_link_t **head, dlist_link_t *l)
{
    if (!l->on)
        return;
    l->on = false;
    if (l->prev)
        l->prev->next = l->next;
    else
        *head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
}

#endif
