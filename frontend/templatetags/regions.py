"""``{% scroll_region "Label" %}…{% endscroll_region %}``: a wide table or plot that scrolls sideways inside
its own box, so the page itself never does on a phone. The box is a named region that takes focus, so a
keyboard user can scroll it with the arrow keys (and screen readers announce what it holds)."""

from __future__ import annotations

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.template.context import Context
from django.utils.html import format_html

register = template.Library()


class ScrollRegionNode(template.Node):
    def __init__(self, label: FilterExpression, nodelist: NodeList) -> None:
        self.label = label
        self.nodelist = nodelist

    def render(self, context: Context) -> str:
        return format_html('<div class="scroll-region" tabindex="0" role="region" aria-label="{}">{}</div>',
                           self.label.resolve(context), self.nodelist.render(context))


@register.tag("scroll_region")
def scroll_region(parser: Parser, token: Token) -> ScrollRegionNode:
    bits = token.split_contents()
    if len(bits) != 2:
        raise template.TemplateSyntaxError(f"{bits[0]} takes one argument: the region's label")
    nodelist = parser.parse(("endscroll_region",))
    parser.delete_first_token()
    return ScrollRegionNode(parser.compile_filter(bits[1]), nodelist)
