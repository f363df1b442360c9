#include <criterion/criterion.h>
#include <stddef.h>

#include "core/dlist.h"

typedef struct member {
    int id;
    dlist_link_t link;
} member_t;

/* The ids in the list, front first, as a number (digits); checks the
 * back links on the way. */
static int ids(dlist_link_t *head)
{
    int out = 0;
    dlist_link_t *prev = NULL;
    for (dlist_link_t *l = head; l; l = l->next) {
        cr_assert_eq(l->prev, prev);
        cr_assert(l->on);
        out = out * 10 + ((member_t *)dlist_owner(l, offsetof(member_t, link)))->id;
        prev = l;
    }
    return out;
}

Test(dlist, joins_at_the_front_and_leaves_from_anywhere)
{
    member_t m[4] = {{.id = 1}, {.id = 2}, {.id = 3}, {.id = 4}};
    dlist_link_t *head = NULL;
    for (int i = 0; i < 4; i++)
        dlist_push(&head, &m[i].link);
    cr_assert_eq(ids(head), 4321);
    dlist_remove(&head, &m[2].link);       /* the middle */
    cr_assert_eq(ids(head), 421);
    dlist_remove(&head, &m[3].link);       /* the front */
    cr_assert_eq(ids(head), 21);
    dlist_remove(&head, &m[0].link);       /* the back */
    cr_assert_eq(ids(head), 2);
    cr_assert(!m[0].link.on && !m[0].link.prev && !m[0].link.next);
    dlist_remove(&head, &m[1].link);
    cr_assert_null(head);
}

Test(dlist, a_second_push_or_remove_changes_nothing)
{
    member_t a = {.id = 1}, b = {.id = 2};
    dlist_link_t *head = NULL;
    dlist_push(&head, &a.link);
    dlist_push(&head, &b.link);
    dlist_push(&head, &a.link);            /* in already: stays where it is */
    cr_assert_eq(ids(head), 21);
    dlist_remove(&head, &a.link);
    dlist_remove(&head, &a.link);          /* gone already */
    cr_assert_eq(ids(head), 2);
    dlist_push(&head, &a.link);            /* and back */
    cr_assert_eq(ids(head), 12);
}
