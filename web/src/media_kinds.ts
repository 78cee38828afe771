// Registers the views of audio, video, html, object3d and chart media with media.ts.
import { extraViews } from "./media";
import { object3dView } from "./media_3d";
import { audioView, videoView } from "./media_av";
import { chartView } from "./media_chart";
import { htmlView } from "./media_html";

extraViews.audio = audioView;
extraViews.video = videoView;
extraViews.html = htmlView;
extraViews.object3d = object3dView;
extraViews.chart = chartView;
